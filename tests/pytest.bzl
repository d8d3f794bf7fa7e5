"""`pytest_tests`: one py_test per pytest file of tests/, run by pytest (tests/pytest_main.py)."""

def pytest_test(name, src, deps = [], data = [], size = "medium", **kwargs):
    """A py_test that runs `src` with pytest, under tests/conftest.py and pyproject.toml.

    Args:
      name: the target's name.
      src: the test file, relative to this package (e.g. `layers/test_adaptive.py`).
      deps: the py_library/py_binary targets the test imports.
      data: other files the test reads or runs.
      size: Bazel test size; "small" allows 60 s, "medium" 300 s, "large" 900 s.
      **kwargs: passed to py_test (timeout, shard_count, tags, ...).
    """
    native.py_test(
        name = name,
        srcs = ["pytest_main.py", src],
        main = "pytest_main.py",
        args = [native.package_name() + "/" + src],
        data = ["conftest.py", "//:pyproject.toml"] + data,
        deps = deps,
        # No generated __init__.py files: pytest sees the same layout as in the repository.
        legacy_create_init = False,
        python_version = "PY3",
        srcs_version = "PY3",
        size = size,
        **kwargs
    )

def pytest_tests(srcs, exceptions = {}, deps = [], data = []):
    """One `pytest_test` per file of `srcs`, named after the file (`test_<name>`).

    Args:
      srcs: the test files, relative to this package (`glob(["**/test_*.py"])`).
      exceptions: `{src: {attribute: value}}` for the files that differ from the defaults
        (size, timeout, shard_count, tags; `deps` and `data` are added to the common ones).
      deps: what every test imports.
      data: what every test reads.
    """
    unknown = [src for src in exceptions if src not in srcs]
    if unknown:
        fail("exceptions name files that are not test files: %s" % unknown)
    names = {}
    for src in srcs:
        name = src.rpartition("/")[2][:-len(".py")]
        if name in names:
            fail("%s and %s would both be //%s:%s; rename one" %
                 (names[name], src, native.package_name(), name))
        names[name] = src
        attrs = dict(exceptions.get(src, {}))
        extra_deps = attrs.pop("deps", [])
        extra_data = attrs.pop("data", [])
        pytest_test(
            name = name,
            src = src,
            deps = deps + extra_deps,
            data = data + extra_data,
            **attrs
        )
