"""The corpus interface, option handling, and archive helpers shared by all corpora.

A corpus turns raw data (an archive, text files, the Python standard library, a random process)
into a `BuiltCorpus`: a `Vocabulary`, the `TextRules`
that map text to symbols, and one int32 token stream `[N]` per split.
"""
import dataclasses
import io
import os
import tarfile
import zipfile
import zlib

import numpy as np

from tf_records import download as download_lib
from tf_records.data_dir_layout import RAW_DIR
from tf_records.corpora.options import CorpusOptions
from tf_records.errors import CorpusError, DataError
from tf_records.text.tokenize import TextRules
from tf_records.vocab.vocabulary import Vocabulary

# Options that do not change the prepared data (they are not part of the corpus fingerprint).
NON_DATA_OPTIONS = ("url", "backend", "verify_checksum", "vocab_url", "vocab_path")


@dataclasses.dataclass
class BuiltCorpus:
    """The result of `Corpus.build`."""

    vocab: Vocabulary
    rules: TextRules
    streams: dict  # split -> int32 [N]
    info: dict = dataclasses.field(default_factory=dict)  # extra corpus-info entries


class Corpus:
    """Base class. Subclasses set `name`, `level`, `cutoffs`, `OPTIONS` and `build`.

    `OPTIONS` (a `CorpusOptions`) maps option name -> default and defines each option once
    (default, help, flag type: the runners' corpus flags are generated from it); unknown options
    are an error naming the valid ones.
    """

    name = ""
    level = ""
    cutoffs = ()
    splits = ("train", "valid", "test")
    archive_name = None  # file name of the canonical archive in data_dir/raw
    OPTIONS = CorpusOptions()

    def __init__(self, **options):
        unknown = sorted(set(options) - set(self.OPTIONS))
        if unknown:
            raise DataError(f"unknown option(s) {unknown} for corpus {self.name!r}; valid options: "
                            f"{sorted(self.OPTIONS)}.")
        for name, value in options.items():
            self.OPTIONS.specs[name].check_range(name, value, DataError)
        self.options = {**self.OPTIONS, **options}

    def fingerprint(self) -> dict:
        """The options that determine the prepared data (stored in corpus-info.json)."""
        return {k: v for k, v in sorted(self.options.items()) if k not in NON_DATA_OPTIONS}

    def option_flags(self) -> list:
        """`runners/prepare_data.py` flags for the non-default data options."""
        flags = []
        for k, v in sorted(self.options.items()):
            if k in NON_DATA_OPTIONS or v == self.OPTIONS[k] or k == "raw_path":
                continue
            if isinstance(v, bool):
                flags.append(f"--{k}" if v else f"--no{k}")
            elif isinstance(v, (list, tuple)):
                flags.append(f"--{k}={','.join(map(str, v))}")
            else:
                flags.append(f"--{k}={v}")
        return flags

    # fetch() checks of the archive at the default url, where its checksum is published
    # (docs/data.md, "Downloads", says where each comes from): {"md5" | "sha256": ..., "size": ...}
    ARCHIVE_CHECKS = {}

    def build(self, data_dir, raw_path=None, download=True, progress=True) -> BuiltCorpus:
        raise NotImplementedError

    # -- archives -----------------------------------------------------------------------------
    def obtain_archive(self, data_dir, raw_path, download, progress, url=None, name=None, **checks):
        """Path of the raw archive: `raw_path`, else `data_dir/raw/<name>`, downloaded from
        `url` (default `self.options['url']`) if missing and `download`."""
        if raw_path:
            raw_path = os.fspath(raw_path)
            if not os.path.exists(raw_path):
                raise CorpusError(f"--raw_path={raw_path} does not exist.")
            return raw_path
        url = url or self.options.get("url")
        if url == self.OPTIONS.get("url") and self.options.get("verify_checksum", True):
            checks = {**self.ARCHIVE_CHECKS, **checks}  # the published archive's checksum
        name = name or self.archive_name
        dest = os.path.join(data_dir, RAW_DIR, name)
        if os.path.exists(dest):
            return dest
        if not download:
            raise CorpusError(f"{dest} does not exist and downloading is off; download {url} and "
                              f"pass --raw_path=FILE, or allow the download.")
        return download_lib.fetch(url, dest, progress=progress, **checks)


def log(progress, message):
    """Prints a stage message on stderr when `progress` is on."""
    if progress:
        import sys
        print(message, file=sys.stderr, flush=True)


def check_nonempty(path):
    """A `CorpusError` for an empty regular file (a pipe, e.g. `--raw_path=<(zcat f.gz)`,
    has no size to check)."""
    if os.path.isfile(path) and os.path.getsize(path) == 0:
        raise CorpusError(f"{path} is empty (0 bytes); delete it and download it again, or pass "
                          "the right --raw_path.")


def open_zip(path) -> zipfile.ZipFile:
    """Opens a zip archive with clear errors for missing, empty and truncated files."""
    if not os.path.exists(path):
        raise CorpusError(f"archive {path} does not exist.")
    check_nonempty(path)
    try:
        return zipfile.ZipFile(path)
    except (zipfile.BadZipFile, OSError) as e:
        raise CorpusError(f"{path} is not a valid zip archive ({e}): truncated or corrupted "
                          "download? Delete it and download it again.") from None


def find_member(names, suffix, path):
    matches = [n for n in names if n == suffix or n.endswith("/" + suffix)]
    if not matches:
        raise CorpusError(f"archive {path} has no member {suffix!r} (members: {names[:10]}"
                          f"{' ...' if len(names) > 10 else ''}); is it the right archive?")
    return matches[0]


def read_zip_member(path, suffix) -> bytes:
    """Bytes of the member whose name ends with `suffix`; CRC errors become CorpusError."""
    with open_zip(path) as zf:
        member = find_member(zf.namelist(), suffix, path)
        try:
            return zf.read(member)
        except (zipfile.BadZipFile, zlib.error, EOFError, OSError) as e:
            raise CorpusError(f"{path}: member {member} is corrupted ({e}); delete the archive and "
                              "download it again.") from None


def zip_member_lines(path, suffix):
    """Yields the text lines (universal newlines, UTF-8) of a zip member."""
    zf = open_zip(path)
    member = find_member(zf.namelist(), suffix, path)
    with zf, zf.open(member) as raw:
        yield from decoded_lines(io.TextIOWrapper(raw, encoding="utf-8"), f"{path}:{member}")


def decoded_lines(text_stream, where):
    """Yields lines of a text stream; decoding and archive errors become one clear CorpusError."""
    lineno = 0
    try:
        for lineno, line in enumerate(text_stream, 1):
            yield line
    except UnicodeDecodeError as e:
        raise CorpusError(f"{where}: not valid UTF-8 near line {lineno + 1} ({e.reason} at byte "
                          f"{e.start} of a read chunk). Word- and char-level corpora need UTF-8 "
                          "text: convert the file (e.g. iconv) or use --level=byte.") from None
    except (zipfile.BadZipFile, zlib.error, EOFError, tarfile.TarError) as e:
        raise CorpusError(f"{where}: archive data is corrupted or truncated ({e}); delete it and "
                          "download it again.") from None


def text_file_lines(path):
    """Yields the lines of a UTF-8 text file with clear errors."""
    if not os.path.exists(path):
        raise CorpusError(f"text file {path} does not exist.")
    with open(path, encoding="utf-8") as f:
        yield from decoded_lines(f, path)


def contiguous_split(data, valid, test, what):
    """Splits a sequence into train / valid / test = data[:-(v+t)], next v, last t (reference
    order: the evaluation sets are the end of the corpus)."""
    if valid + test >= len(data):
        raise CorpusError(f"{what} has {len(data)} symbols, too few for {valid} valid + {test} test "
                          "symbols and a non-empty train split; use a bigger corpus or smaller "
                          "evaluation splits.")
    n = len(data)
    return {"train": data[: n - valid - test], "valid": data[n - valid - test: n - test],
            "test": data[n - test:]}


def counts_of_ids(streams: dict, size: int) -> np.ndarray:
    """Total counts of symbol values 0..size-1 over several integer arrays."""
    return sum(np.bincount(np.asarray(s, np.int64), minlength=size) for s in streams.values())
