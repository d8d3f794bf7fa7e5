"""`SourceWeights`: the named arrays of a source checkpoint, with bookkeeping of their use.

Every source variable must be consumed by the mapping (`take`) or explicitly ignored (`ignore`,
e.g. optimizer slots and `global_step`); `check_all_used` lists whatever was neither, so a
layout the importer does not understand fails loudly instead of being silently dropped.
"""
import fnmatch

import numpy as np

from txl_tf.convert.errors import WeightImportError


class SourceWeights:
    """Read-once view of a {name: array-like or zero-argument loader} mapping.

    Args:
      arrays: name -> numpy array, or a callable returning it (lazy, for large checkpoints).
      shapes: optional name -> shape, used by `shape` without loading the array.
      description: how the source is called in error messages (e.g. the checkpoint path).
    """

    def __init__(self, arrays, shapes=None, description="source"):
        self._arrays = dict(arrays)
        self._shapes = dict(shapes or {})
        self._used = set()
        self._ignored = {}
        self.description = description

    @property
    def names(self):
        return sorted(self._arrays)

    def __contains__(self, name):
        return name in self._arrays

    def shape(self, name):
        if name in self._shapes:
            return tuple(self._shapes[name])
        return tuple(np.shape(self._load(name)))

    def _load(self, name):
        if name not in self._arrays:
            raise WeightImportError(f"{self.description}: variable {name!r} is missing.")
        value = self._arrays[name]
        if callable(value):
            value = value()
            self._arrays[name] = value
        return np.asarray(value)

    def peek(self, name):
        """The array of `name` without marking it used."""
        return self._load(name)

    def take(self, name):
        """The array of `name`, marked as used."""
        value = self._load(name)
        self._used.add(name)
        return value

    def ignore(self, pattern, reason):
        """Mark every name matching the glob `pattern` as deliberately unused."""
        for name in self._arrays:
            if fnmatch.fnmatchcase(name, pattern) and name not in self._used:
                self._ignored[name] = reason

    def check_all_used(self):
        left = [n for n in sorted(self._arrays) if n not in self._used and n not in self._ignored]
        if left:
            raise WeightImportError(
                f"{self.description}: {len(left)} source variable(s) were not used by the mapping: "
                f"{left}. The source has a layout this importer does not know (another model "
                "class or extra heads); nothing was written.")

    @property
    def ignored(self):
        return dict(self._ignored)
