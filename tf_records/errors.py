"""Errors raised by `tf_records`.

Every error names the problem and the fix (usually the exact command that rebuilds the data).
All of them derive from `DataError`, itself a `ValueError`, so callers that only want to
report "bad data" can catch one class.
"""


class DataError(ValueError):
    """Base class: bad input data, bad options or bad prepared files."""


class CorpusError(DataError):
    """A raw corpus (archive, text file) is missing, empty, truncated or undecodable."""


class DownloadError(DataError):
    """A download failed (no network, HTTP error, checksum mismatch)."""
    exit_code = 1  # the network or the server, not the user's input (runners/cli/__init__.py)


class VocabularyError(DataError):
    """A vocabulary file is malformed, or a symbol is unknown under the `error` policy."""


class VocabularyImportError(VocabularyError):
    """A released vocabulary (a reference pickle or a symbol list) that cannot be imported:
    unreadable, of another size than the model's, or unsafe."""


class UnsafePickleError(VocabularyImportError):
    """A pickle that names a global outside the allow-list of
    `tf_records.vocab.reference_pickle`."""


class LayoutError(DataError):
    """A `RecordLayout` is invalid, or a corpus is too short for it."""


class RecordsNotFoundError(DataError):
    """No records exist for a split and layout; the message holds the command that makes them."""


class RecordsMismatchError(DataError):
    """Records exist but differ from what the run asks for (which value, and how to rebuild)."""


class RecordsCorruptError(DataError):
    """A prepared file (records, record metadata, corpus info, token cache) is missing,
    truncated, malformed or fails its checksum."""


class VocabularyMismatchError(VocabularyError):
    """A data directory's `vocab.txt` is missing or differs from its `corpus-info.json`."""


class DataDirError(DataError):
    """A data directory cannot be used: it is a file, read-only, or its disk is full."""


class StorageError(DataDirError):
    """A write into a data directory failed: its disk is full or it is read-only."""
    exit_code = 1  # a runtime failure, not a bad input (runners/cli/__init__.py)
