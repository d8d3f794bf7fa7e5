"""`pytest_test`: one py_test per pytest file of tests/."""

def pytest_test(name, deps = [], data = [], size = "medium", **kwargs):
    """A py_test that runs `<name>.py` with pytest, under tests/conftest.py and pyproject.toml.

    Args:
      name: the test file's name without `.py` (`test_<something>`).
      deps: the py_library/py_binary targets the test imports.
      data: other files the test reads or runs (e.g. runner scripts, flagfiles).
      size: Bazel test size; "medium" allows 300 s, "large" 900 s.
      **kwargs: passed to py_test (timeout, shard_count, tags, ...).
    """
    src = name + ".py"
    native.py_test(
        name = name,
        srcs = ["pytest_main.py", src],
        main = "pytest_main.py",
        args = [native.package_name() + "/" + src],
        data = ["conftest.py", "//:pyproject.toml"] + data,
        deps = deps,
        # No generated tests/__init__.py: pytest sees the same layout as in the repository.
        legacy_create_init = False,
        python_version = "PY3",
        srcs_version = "PY3",
        size = size,
        **kwargs
    )
