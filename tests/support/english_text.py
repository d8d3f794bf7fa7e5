"""A real English text assembled from what this machine has installed, for tests of "your own
text" (not synthetic): the documentation shipped with the installed Python packages (READMEs,
changelogs and licences: *.md, *.rst, LICENSE*, METADATA) and the documentation strings of the
Python standard library's modules, classes and functions.

The same requirements.txt gives the same packages on every machine, so the text is the same
wherever the same packages and Python version are installed: the documents are read in sorted
order, each distinct text once (many packages ship the same licence), shuffled with a fixed
seed (so that valid and test, the end of the file, are the same kind of text as train) and cut
at `max_bytes`. Files that are missing, unreadable or not UTF-8 are skipped.

Example:
  >>> path = write_english_text(tmp_path / "book.txt")   # about 1.5 MB of English
"""
import ast
import os
import random
import site
import sys
import sysconfig

# Package documentation files, by name.
_DOC_SUFFIXES = (".md", ".rst")
_DOC_PREFIXES = ("LICENSE", "LICENCE", "COPYING", "METADATA")
# Shortest document kept (bytes): shorter ones are mostly stubs and headers.
_MIN_DOCUMENT = 200


def _package_dirs() -> list:
    dirs = [sysconfig.get_paths()["purelib"]] + list(getattr(site, "getsitepackages", list)())
    return sorted({d for d in dirs if os.path.isdir(d)})


def _is_doc(name: str) -> bool:
    return name.endswith(_DOC_SUFFIXES) or name.startswith(_DOC_PREFIXES)


def _read(path: str):
    try:
        with open(path, encoding="utf-8") as fh:
            return fh.read()
    except (OSError, UnicodeDecodeError):
        return None


def package_documents() -> list:
    """[(path, text)] of the documentation files of the installed packages, sorted by path."""
    found = []
    for root_dir in _package_dirs():
        for root, dirs, files in os.walk(root_dir):
            dirs.sort()
            found.extend(os.path.join(root, f) for f in sorted(files) if _is_doc(f))
    return [(p, t) for p, t in ((p, _read(p)) for p in sorted(set(found))) if t]


def _docstrings(source: str) -> list:
    """The module, class and function docstrings of a Python source text."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return []
    nodes = [tree] + [n for n in ast.walk(tree) if isinstance(
        n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))]
    return [d for d in (ast.get_docstring(n) for n in nodes) if d]


def stdlib_documents() -> list:
    """[(path, text)] of the docstrings of each standard-library module (top-level files of
    the standard library directory, sorted), one document per module."""
    stdlib = sysconfig.get_paths()["stdlib"]
    try:
        names = sorted(n for n in os.listdir(stdlib) if n.endswith(".py"))
    except OSError:
        return []
    documents = []
    for name in names:
        source = _read(os.path.join(stdlib, name))
        text = "\n\n".join(_docstrings(source)) if source else ""
        if text:
            documents.append((os.path.join(stdlib, name), text))
    return documents


def english_text(max_bytes: int = 1_500_000, seed: int = 0) -> str:
    """The assembled text: every distinct document of at least 200 bytes, shuffled with
    `seed`, separated by blank lines, cut at a line end before `max_bytes` UTF-8 bytes."""
    documents = sorted({t.strip() for _, t in package_documents() + stdlib_documents()
                        if len(t.strip()) >= _MIN_DOCUMENT})  # each text once (licences repeat)
    random.Random(seed).shuffle(documents)
    out, size = [], 0
    for document in documents:
        for line in (document + "\n\n").splitlines(keepends=True):
            n = len(line.encode("utf-8"))
            if size + n > max_bytes:
                return "".join(out)
            out.append(line)
            size += n
    return "".join(out)


def write_english_text(path, max_bytes: int = 1_500_000, min_bytes: int = 1_000_000) -> str:
    """Writes `english_text(max_bytes)` to `path` and returns the path.

    Raises:
      RuntimeError: this machine has less than `min_bytes` of such text (the packages of
        requirements.txt are not installed).
    """
    text = english_text(max_bytes)
    size = len(text.encode("utf-8"))
    if size < min_bytes:
        raise RuntimeError(f"only {size:,} bytes of English documentation found under "
                           f"{_package_dirs()} and {sys.prefix}; install requirements.txt")
    with open(path, "w", encoding="utf-8") as fh:
        fh.write(text)
    return os.fspath(path)
