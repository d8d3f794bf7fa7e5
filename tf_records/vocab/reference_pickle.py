"""Read the symbol list of a released vocabulary pickle without running any code from it.

The reference repository ships its vocabularies inside `cache.pkl`, a pickled `data_utils.Corpus`
holding a `vocabulary.Vocab` (whose `idx2sym` is the id-ordered symbol list) and the encoded
splits as NumPy arrays. Unpickling normally imports and calls whatever globals the file names,
which is how a pickle runs arbitrary code. `RestrictedUnpickler.find_class` is the only door
through which a pickle reaches code, and here it admits:
  * `collections.OrderedDict`, `collections.Counter` (plain containers);
  * the reference's own classes (`vocabulary.Vocab`, `data_utils.Corpus`, their PyTorch-side and
    Hugging Face counterparts, the Moses helpers and `re._compile` found in a Hugging Face
    `vocab.pkl`) mapped to `InertObject`, a local class whose construction and
    `__setstate__` only store the given state and never call anything;
  * NumPy's array / dtype / scalar reconstructors and `copyreg._reconstructor`, mapped to inert
    stand-ins that drop the data (the splits are not needed; they are rebuilt as TFRecords);
  * `_codecs.encode`, mapped to a function that only turns a str into latin-1 bytes (how
    Python 3 writes bytes under protocol 2);
and refuses every other global (`os.system`, `builtins.eval`, `subprocess.Popen`, ...) with an
`UnsafePickleError` before anything is called. The real `pickle.load` is never used on these
files. Python 2 byte strings are read as bytes and decoded as UTF-8.
"""
import collections
import io
import pickle

from tf_records.errors import UnsafePickleError, VocabularyImportError
from untrusted_files import reading

__all__ = ["InertObject", "RestrictedUnpickler", "UnsafePickleError", "load_vocab_pickle"]


class InertObject:
    """Stand-in for a pickled object of an allowed class: it stores its state and does nothing."""

    source_class = ""

    def __init__(self, *args, **kwargs):
        self.args = args
        self.state = {}

    def __setstate__(self, state):
        if isinstance(state, tuple) and len(state) == 2 and isinstance(state[0], dict):
            state = {**state[0], **(state[1] or {})}  # (dict, slots) form
        if isinstance(state, dict):
            self.state = {(k.decode("latin1") if isinstance(k, bytes) else k): v
                          for k, v in state.items()}
        else:
            self.state = {"": state}

    def __getattr__(self, name):
        state = self.__dict__.get("state", {})
        if name in state:
            return state[name]
        raise AttributeError(name)


def _inert_class(module, name):
    return type(name, (InertObject,), {"source_class": f"{module}.{name}"})


def _safe_reconstructor(cls, base, state):
    # copyreg._reconstructor(cls, object, None) builds plain objects of `cls`; only inert ones.
    if isinstance(cls, type) and issubclass(cls, InertObject):
        return cls()
    raise UnsafePickleError(f"copyreg._reconstructor called with {cls!r}.")


def _safe_latin1_encode(text, encoding="latin1"):
    # Python 3 writes bytes in protocol 2 as _codecs.encode(str, "latin1"); allow only that.
    if isinstance(text, str) and encoding in ("latin1", "latin-1"):
        return text.encode("latin1")
    raise UnsafePickleError(f"_codecs.encode called with {type(text).__name__}, {encoding!r}.")


_INERT_CLASSES = {
    ("vocabulary", "Vocab"), ("data_utils", "Corpus"), ("data_utils", "LMOrderedIterator"),
    ("utils.vocabulary", "Vocab"), ("__main__", "Vocab"), ("__main__", "Corpus"),
    ("transformers.models.transfo_xl.tokenization_transfo_xl", "TransfoXLCorpus"),
    # A Hugging Face `vocab.pkl` is the tokenizer's attribute dict: Moses helpers and compiled
    # regular expressions beside `idx2sym`; they become inert stand-ins, never real objects.
    ("sacremoses.normalize", "MosesPunctNormalizer"), ("sacremoses.tokenize", "MosesTokenizer"),
    ("sacremoses.tokenize", "MosesDetokenizer"), ("re", "_compile"),
}
_NUMPY_RECONSTRUCTORS = {
    ("numpy.core.multiarray", "_reconstruct"), ("numpy._core.multiarray", "_reconstruct"),
    ("numpy", "ndarray"), ("numpy", "dtype"), ("numpy.core.multiarray", "scalar"),
    ("numpy._core.multiarray", "scalar"),
}
_CONTAINERS = {("collections", "OrderedDict"): collections.OrderedDict,
               ("collections", "Counter"): collections.Counter}


class RestrictedUnpickler(pickle.Unpickler):
    """`pickle.Unpickler` whose `find_class` admits only the allow-list above."""

    def __init__(self, file):
        super().__init__(file, encoding="bytes")
        self._inert = {}

    def find_class(self, module, name):
        key = (module, name)
        if key in _CONTAINERS:
            return _CONTAINERS[key]
        if key in _INERT_CLASSES or key in _NUMPY_RECONSTRUCTORS:
            if key not in self._inert:
                self._inert[key] = _inert_class(module, name)
            return self._inert[key]
        if key in {("copyreg", "_reconstructor"), ("copy_reg", "_reconstructor")}:
            return _safe_reconstructor
        if key == ("_codecs", "encode"):
            return _safe_latin1_encode
        raise UnsafePickleError(
            f"refusing to unpickle the global {module}.{name}: only plain containers and the "
            "reference's Vocab/Corpus objects are allowed (this file may try to run code).")


def _text(symbol):
    if isinstance(symbol, bytes):
        try:
            return symbol.decode("utf-8")
        except UnicodeDecodeError:
            raise VocabularyImportError(f"vocabulary symbol {symbol!r} is not UTF-8.") from None
    if isinstance(symbol, str):
        return symbol
    raise VocabularyImportError(f"vocabulary symbol {symbol!r} is not a string.")


def _find_idx2sym(obj, depth=0):
    """The `idx2sym` list inside a Corpus, a Vocab, or a dict of attributes."""
    if depth > 3:
        return None
    state = obj.state if isinstance(obj, InertObject) else obj if isinstance(obj, dict) else None
    if state is None:
        return None
    state = {(k.decode("latin1") if isinstance(k, bytes) else k): v for k, v in state.items()}
    if isinstance(state.get("idx2sym"), list):
        return state["idx2sym"], state
    for key in ("vocab",) + tuple(state):
        found = _find_idx2sym(state.get(key), depth + 1)
        if found is not None:
            return found
    return None


def load_vocab_pickle(path):
    """The symbol list of a released vocabulary pickle, read without running code from it.

    Args:
      path: a `cache.pkl` of the reference code or a Hugging Face `vocab.pkl`.

    Returns:
      `(symbols, info)`: the symbols in id order as str, and a dict with `dataset` when the
      pickle names it.

    Raises:
      UnsafePickleError: the pickle names a global outside the allow-list.
      VocabularyImportError: not a readable pickle, no `idx2sym` list, or a symbol that is not
        UTF-8 text.
    """
    data = reading.read_bytes(path, max_bytes=reading.MAX_VOCAB_BYTES,
                              error=VocabularyImportError)
    try:
        obj = RestrictedUnpickler(io.BytesIO(data)).load()
    except UnsafePickleError as error:
        raise UnsafePickleError(f"{path}: {error}") from None
    except (pickle.UnpicklingError, EOFError, ValueError, TypeError, AttributeError) as error:
        raise VocabularyImportError(f"{path}: not a readable vocabulary pickle ({error}).") from None
    found = _find_idx2sym(obj)
    if found is None:
        raise VocabularyImportError(f"{path}: no `idx2sym` symbol list found (expected the "
                                "reference's cache.pkl Corpus or a Vocab).")
    idx2sym, _ = found
    info = {}
    state = obj.state if isinstance(obj, InertObject) else obj if isinstance(obj, dict) else {}
    for key, value in state.items():
        key = key.decode("latin1") if isinstance(key, bytes) else key
        if key == "dataset" and isinstance(value, (str, bytes)):
            info["dataset"] = _text(value)
    return [_text(s) for s in idx2sym], info
