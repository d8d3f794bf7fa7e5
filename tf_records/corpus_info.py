"""What a prepared data directory says it holds: `corpus-info.json`, and `vocab.txt` checked
against it.

`corpus-info.json` (written by `tf_records.prepare`) holds at least `dataset`, `level` and
`vocab_size`, and also the corpus options (`options`, `option_flags`), `vocab_checksum`, the
special symbols, `cutoffs`, `text_rules` and the token counts per split. Every reader of the
directory (records, vocabularies, text) reads it here, and every error about it names the
`runners/prepare_data.py` command that re-makes the directory (`base_command`).

Example:

```python
info = read_corpus_info("data/builtin")   # None before the directory is prepared
check_vocab_file("data/builtin", info)      # vocab.txt is the one prepared
```
"""
import os
import shlex
import warnings

from tf_records import atomic, data_dir_layout
from tf_records.errors import VocabularyMismatchError
from tf_records.vocab_checksum import file_checksum
from untrusted_files import schema as s

FORMAT = "txl-tf-records-v1"
CORPUS_INFO_KEYS = ("dataset", "level", "vocab_size")
CORPUS_INFO_SCHEMA = s.CORPUS_INFO_SCHEMA
MODEL_INFO_SCHEMA = s.MODEL_INFO_SCHEMA


def read_corpus_info(data_dir):
    """The `corpus-info.json` of `data_dir` or None.

    A file written before `vocab_checksum` was recorded gets it computed from `vocab.txt`
    (with a warning: the vocabulary can then not be checked against what was prepared).

    Raises:
      RecordsCorruptError: the file is not JSON or lacks one of `CORPUS_INFO_KEYS`.
    """
    path = os.path.join(data_dir, data_dir_layout.CORPUS_INFO_FILE)
    if not os.path.exists(path):
        return None
    info = atomic.read_json(path, schema=CORPUS_INFO_SCHEMA, fix=(
        f"restore it, or delete {data_dir} and prepare it again with runners/prepare_data.py"))
    vocab_path = os.path.join(data_dir, data_dir_layout.VOCAB_FILE)
    if "vocab_checksum" not in info and os.path.exists(vocab_path):
        info["vocab_checksum"] = file_checksum(vocab_path, info["level"])
        warnings.warn(f"{path} records no vocab_checksum (prepared by an older version): "
                      f"{vocab_path} is taken as it is ({info['vocab_checksum']}).")
    return info


def check_vocab_file(data_dir, info):
    """Checks that `data_dir/vocab.txt` is the vocabulary `corpus-info.json` describes.

    Args:
      data_dir: a prepared data directory.
      info: its corpus-info dict (`read_corpus_info`).

    Raises:
      VocabularyMismatchError: `vocab.txt` is missing, or was edited or replaced after preparing
        (its checksum differs from the recorded `vocab_checksum`).
    """
    path = os.path.join(data_dir, data_dir_layout.VOCAB_FILE)
    command = base_command(data_dir, info)
    if not os.path.exists(path):
        raise VocabularyMismatchError(
            f"{path} is missing: {data_dir} cannot be used without the vocabulary it was prepared "
            f"with. Re-make it with: {command}")
    got = file_checksum(path, info["level"])
    if got != info.get("vocab_checksum", got):
        raise VocabularyMismatchError(
            f"{path} does not match "
            f"{os.path.join(data_dir, data_dir_layout.CORPUS_INFO_FILE)} (vocabulary checksum "
            f"{got}, prepared as {info['vocab_checksum']}): it was edited or replaced. Restore "
            f"the original, or delete {path} and re-make it with: {command}")


def base_command(data_dir, info) -> str:
    """`python runners/prepare_data.py --dataset=... --data_dir=... <options>` (no records)."""
    parts = ["python", "runners/prepare_data.py", f"--dataset={info.get('dataset', '<dataset>')}",
             f"--data_dir={data_dir}", "--splits="] + list(info.get("option_flags", []))
    return " ".join(shlex.quote(p) if "<" not in p else p for p in parts)
