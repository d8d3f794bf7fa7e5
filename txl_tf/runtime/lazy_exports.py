"""Public names of a package loaded on first use (PEP 562), so that importing the package does
not import TensorFlow until a name that needs it is used.

Example (a package `__init__.py`):
  >>> _EXPORTS = {"TrainOptions": "txl_tf.commands.train_options", "train": "txl_tf.commands.train"}
  >>> __getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
"""
import importlib
import sys
from typing import Callable, Mapping, Tuple


def lazy_exports(package: str, exports: Mapping[str, str]) -> Tuple[Callable, Callable]:
    """(`__getattr__`, `__dir__`) of `package` for its public names.

    Args:
      package: the package's `__name__`.
      exports: public name -> the module that defines it.

    Returns:
      `__getattr__(name)`: the public name, or a submodule of the package, imported on first use
      and then kept in the package's namespace; `__dir__()`: its names and the public ones.
    """
    def __getattr__(name):
        if name in exports:
            value = getattr(importlib.import_module(exports[name]), name)
        else:
            try:
                value = importlib.import_module(f"{package}.{name}")
            except ModuleNotFoundError as error:
                if error.name != f"{package}.{name}":
                    raise
                raise AttributeError(f"module {package!r} has no attribute {name!r}") from None
        setattr(sys.modules[package], name, value)
        return value

    def __dir__():
        return sorted(set(vars(sys.modules[package])) | set(exports))

    return __getattr__, __dir__
