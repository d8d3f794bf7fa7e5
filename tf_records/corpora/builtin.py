"""The built-in default corpus: the bytes of the Python standard library's own `.py` files.

It needs no download and exists wherever Python runs. The files under
`sysconfig.get_paths()["stdlib"]` ending in `.py` (skipping `site-packages`,
`dist-packages` and `__pycache__`) are concatenated in sorted order of their relative POSIX
paths, so the stream is deterministic for a given Python installation; `corpus-info.json`
records the Python version, the number of files and the stream's sha256 (a different Python gives
a different corpus). Byte level, the 256-symbol vocabulary (id == byte value). Split: the last
`2 * eval_fraction` of the bytes are valid then test (like enwik8's 90/5/5). `max_bytes`
(0 = all) keeps only the first bytes of the stream, for quick runs and tests.
"""
import hashlib
import os
import platform
import sysconfig

import numpy as np

from tf_records.corpora.base import Corpus, contiguous_split
from tf_records.corpora.common import byte_corpus
from tf_records.corpora.options import (EVAL_FRACTION_HELP, EVAL_FRACTION_RANGE, MAX_TOKENS,
                                        CorpusOptions, Option)

SKIP_DIRS = {"site-packages", "dist-packages", "__pycache__"}


def stdlib_files(root=None):
    """Relative POSIX paths of the stdlib `.py` files, sorted."""
    root = root or sysconfig.get_paths()["stdlib"]
    found = []
    for directory, dirs, files in os.walk(root):
        dirs[:] = [d for d in dirs if d not in SKIP_DIRS]
        for f in files:
            if f.endswith(".py"):
                found.append(os.path.relpath(os.path.join(directory, f), root).replace(os.sep, "/"))
    return root, sorted(found)


def stdlib_bytes(max_bytes=0):
    """The corpus bytes (uint8 [N]) and a description dict."""
    root, files = stdlib_files()
    chunks, total = [], 0
    for rel in files:
        with open(os.path.join(root, *rel.split("/")), "rb") as f:
            data = f.read()
        chunks.append(data)
        total += len(data)
        if max_bytes and total >= max_bytes:
            break
    data = b"".join(chunks)
    if max_bytes:
        data = data[:max_bytes]
    info = {"python_version": platform.python_version(),
            "python_implementation": platform.python_implementation(),
            "stdlib_files": len(chunks), "stream_bytes": len(data),
            "stream_sha256": hashlib.sha256(data).hexdigest()}
    return np.frombuffer(data, np.uint8), info


class Builtin(Corpus):
    name = "builtin"
    level = "byte"
    cutoffs = ()
    OPTIONS = CorpusOptions(max_bytes=Option(0, "keep only the first N bytes (0 = all).",
                                             range=(0, MAX_TOKENS, "0: all")),
                            eval_fraction=Option(0.05, EVAL_FRACTION_HELP,
                                                 range=EVAL_FRACTION_RANGE))

    def build(self, data_dir, raw_path=None, download=True, progress=True):
        data, info = stdlib_bytes(int(self.options["max_bytes"]))
        n = int(len(data) * float(self.options["eval_fraction"]))
        raw = contiguous_split(data, n, n, "the built-in corpus")
        return byte_corpus(raw, full_bytes=True, info=info)
