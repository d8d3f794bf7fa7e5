"""Entry point of the Bazel py_tests (tests/pytest.bzl): runs pytest on the given test files.

Bazel runs it from the runfiles tree, which holds `pyproject.toml`, `tests/conftest.py` and
`tests/support/` where the repository does, so pytest applies the same set-up and options as
`python -m pytest tests`.
The project's own packages are imported only from the runfiles (the targets' declared deps),
never from an editable install of the repository into the virtualenv.
"""
import os
import sys


def _drop_editable_install():
    """Removes setuptools' editable-install finders of this project from the import system."""
    sys.meta_path[:] = [f for f in sys.meta_path
                        if not getattr(f, "__module__", "").startswith("__editable__")
                        and not type(f).__module__.startswith("__editable__")]
    sys.path_hooks[:] = [h for h in sys.path_hooks
                         if not getattr(h, "__module__", "").startswith("__editable__")]
    sys.path_importer_cache.clear()


def bazel_options(environ):
    """pytest options for Bazel's test protocol: its XML report and `--test_filter`."""
    options = ["-p", "no:cacheprovider"]  # no .pytest_cache in the runfiles tree
    if environ.get("XML_OUTPUT_FILE"):  # per-test-case results in bazel-testlogs/.../test.xml
        options.append(f"--junitxml={environ['XML_OUTPUT_FILE']}")
    if environ.get("TESTBRIDGE_TEST_ONLY"):  # bazel test --test_filter=EXPR: pytest -k EXPR
        options += ["-k", environ["TESTBRIDGE_TEST_ONLY"]]
    return options


def main(argv):
    _drop_editable_install()
    import pytest

    return pytest.main([*bazel_options(os.environ), *argv])


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
