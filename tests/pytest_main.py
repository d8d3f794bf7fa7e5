"""Entry point of the Bazel py_tests (tests/pytest.bzl): runs pytest on the given test files.

Bazel runs it from the runfiles tree, where `tests/conftest.py` and `pyproject.toml` sit next to
the test file, so pytest applies the same set-up and options as `python -m pytest tests`.
The project's own packages are imported only from the runfiles (the targets' declared deps),
never from an editable install of the repository into the virtualenv.
"""
import sys


def _drop_editable_install():
    """Removes setuptools' editable-install finders of this project from the import system."""
    sys.meta_path[:] = [f for f in sys.meta_path
                        if not getattr(f, "__module__", "").startswith("__editable__")
                        and not type(f).__module__.startswith("__editable__")]
    sys.path_hooks[:] = [h for h in sys.path_hooks
                         if not getattr(h, "__module__", "").startswith("__editable__")]
    sys.path_importer_cache.clear()


def main(argv):
    _drop_editable_install()
    import pytest

    # No cache: the runfiles tree is read-only in Bazel's sandbox.
    return pytest.main(["-p", "no:cacheprovider", *argv])


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
