"""The checksum of a vocabulary file: what corpus-info.json records as `vocab_checksum`.

It lives beside `corpus_info` (which checks `vocab.txt` with it) and below `vocab/` (whose
`Vocabulary.checksum` is the same value), so that the two import it in one direction.

Example:

```python
file_checksum("data/builtin/vocab.txt", "byte")   # '3f1c...' (16 hex digits)
```
"""
import hashlib
import os

from tf_records.errors import VocabularyError
from untrusted_files import reading


def content_checksum(level, content: bytes) -> str:
    """sha256 (hex, first 16 digits) of `level=<level>\\n` followed by a vocabulary file's bytes.

    Equals `Vocabulary.checksum` of the vocabulary a file written by
    `Vocabulary.save` holds; any edit of the file changes it.
    """
    return hashlib.sha256(f"level={level}\n".encode("utf-8") + content).hexdigest()[:16]


def file_checksum(path, level) -> str:
    """`content_checksum` of the vocabulary file `path` (read as bytes, not parsed; a file from
    elsewhere: inside its directory, at most `MAX_VOCAB_BYTES`).

    Raises:
      VocabularyError: a link outside its directory, not a regular file, or too large.
    """
    return content_checksum(level, read_vocab_bytes(path))


def read_vocab_bytes(path) -> bytes:
    """The bytes of the vocabulary file `path`, read as `untrusted_files.reading` reads a file
    from elsewhere (inside its own directory)."""
    path = os.fspath(path)
    return reading.read_bytes(path, inside=os.path.dirname(os.path.abspath(path)),
                              max_bytes=reading.MAX_VOCAB_BYTES, error=VocabularyError,
                              name=f"vocabulary file {path}")
