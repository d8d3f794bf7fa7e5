"""enwik8: the first 10^8 bytes of an English Wikipedia XML dump (Hutter prize), byte level.

Reference preprocessing (awd-lstm `prep_enwik8.py` + kimiyoung `data_utils`): the last 10M
bytes are split into valid (5M) and test (5M), the first 90M are train; newline bytes became line
breaks and vanished from the token stream, so the vocabulary has 204 symbols (the bytes that occur,
minus newline), ordered by count. That is the default here (`full_bytes=False`), for bpc
comparable with the paper. `full_bytes=True` keeps every byte, newlines included, with the
256-symbol vocabulary id == byte value: bpc is then over all 10^8 bytes (newlines are cheap to
predict, so it is not directly comparable).

Integrity: the archive member `enwik8` must have exactly 100,000,000 bytes and the md5
published by Matt Mahoney (`a1fa5ffddb56f4953e226637dabbb36a`). No checksum of the zip file
itself is pinned (none is published); a download is checked for completeness (Content-Length)
and by the zip CRC of the member. `verify_checksum=False` accepts other files (tests use tiny
fake archives).
"""
import hashlib

import numpy as np

from tf_records.corpora.base import Corpus, contiguous_split, read_zip_member
from tf_records.corpora.common import byte_corpus
from tf_records.corpora.options import (FULL_BYTES_HELP, URL_HELP, VERIFY_CHECKSUM_HELP,
                                        CorpusOptions, Option)
from tf_records.errors import CorpusError

URL = "https://mattmahoney.net/dc/enwik8.zip"
MEMBER_MD5 = "a1fa5ffddb56f4953e226637dabbb36a"
MEMBER_SIZE = 100_000_000


class Enwik8(Corpus):
    name = "enwik8"
    level = "byte"
    cutoffs = ()
    archive_name = "enwik8.zip"
    OPTIONS = CorpusOptions(
        full_bytes=Option(False, FULL_BYTES_HELP),
        eval_bytes=Option(5_000_000, "bytes in valid and in test (5,000,000).",
                          range=(1, 50_000_000, "enwik8 holds 100,000,000 bytes")),
        verify_checksum=Option(True, VERIFY_CHECKSUM_HELP),
        url=Option(URL, URL_HELP))

    def build(self, data_dir, raw_path=None, download=True, progress=True):
        path = self.obtain_archive(data_dir, raw_path, download, progress)
        data = read_zip_member(path, "enwik8")
        if self.options["verify_checksum"]:
            md5 = hashlib.md5(data).hexdigest()
            if len(data) != MEMBER_SIZE or md5 != MEMBER_MD5:
                raise CorpusError(
                    f"{path}: member enwik8 has {len(data)} bytes and md5 {md5}; the canonical file "
                    f"has {MEMBER_SIZE} bytes and md5 {MEMBER_MD5}. Delete it and download "
                    f"{URL} again, or pass --noverify_checksum to use this file anyway.")
        n = int(self.options["eval_bytes"])
        raw = contiguous_split(np.frombuffer(data, np.uint8), n, n, f"{path}:enwik8")
        full = bool(self.options["full_bytes"])
        return byte_corpus(raw, drop_bytes=() if full else (10,), full_bytes=full,
                           info={"source": URL, "raw_bytes": len(data)})
