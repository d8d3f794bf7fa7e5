"""The glob-based Bazel targets cover the files (README "Build and test with Bazel").

The BUILD files glob their sources, so what can go wrong is what a glob cannot see: a BUILD
file in a sub-directory (it would cut a library's glob), an entry point missing from (or a
module wrongly in) runners/BUILD's `NOT_ENTRY_POINTS`, an entry of tests/BUILD's `EXCEPTIONS`
naming no test file, two test files with one target name, a test helper or conftest.py outside
the places a test target takes them from. The tables are read from the BUILD files' Starlark
(Python syntax) without Bazel.
"""
import ast
import os
import re

import pytest

# The source tree, also under `bazel test` (where this file is a runfiles symlink into it; the
# py_test is tagged "external" so that Bazel never serves a cached result).
REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.realpath(__file__))))
PACKAGES = ("txl_tf", "tf_records", "runners", "tests", "untrusted_files")
MAIN_GUARD = re.compile(r"^if __name__ == ['\"]__main__['\"]:", re.M)
TEST_ATTRIBUTES = {"size", "timeout", "shard_count", "tags", "flaky", "deps", "data"}


def files(top, suffix=""):
    """Repository-relative paths below `top` (no caches, no hidden directories)."""
    found = []
    for directory, dirs, names in os.walk(os.path.join(REPO, top)):
        dirs[:] = sorted(d for d in dirs if d != "__pycache__" and not d.startswith("."))
        rel = os.path.relpath(directory, REPO).replace(os.sep, "/")
        found += [f"{rel}/{n}" for n in sorted(names) if n.endswith(suffix)]
    return found


def build_constants(package):
    """The top-level `NAME = <literal>` assignments of `<package>/BUILD`."""
    path = os.path.join(REPO, package, "BUILD")
    with open(path) as f:
        tree = ast.parse(f.read(), path)
    constants = {}
    for node in tree.body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1:
            try:
                constants[node.targets[0].id] = ast.literal_eval(node.value)
            except ValueError:  # a glob(...) or other call
                pass
    return constants


def read(path):
    with open(os.path.join(REPO, path), encoding="utf-8") as f:
        return f.read()


@pytest.mark.parametrize("package", PACKAGES)
def test_one_build_file_per_package(package):
    assert os.path.isfile(os.path.join(REPO, package, "BUILD"))
    nested = [p for p in files(package) if os.path.basename(p) in ("BUILD", "BUILD.bazel")
              and os.path.dirname(p) != package]
    assert not nested, (f"{nested} would make sub-packages and cut //{package}'s glob; "
                        f"keep one BUILD file in {package}/")


def test_entry_points_are_exactly_the_files_with_a_main_guard():
    """runners/BUILD makes a py_binary of every runners/*.py and runners/tools/*.py except
    NOT_ENTRY_POINTS: that must be exactly the files that run as scripts."""
    not_entry_points = {f"runners/{p}" for p in build_constants("runners")["NOT_ENTRY_POINTS"]}
    candidates = [p for p in files("runners", ".py") if os.path.dirname(p) in ("runners",
                                                                             "runners/tools")]
    missing = sorted(not_entry_points - set(candidates))
    assert not missing, f"NOT_ENTRY_POINTS in runners/BUILD names missing files: {missing}"
    scripts = {p for p in candidates if MAIN_GUARD.search(read(p))}
    wrongly_binaries = sorted(set(candidates) - scripts - not_entry_points)
    assert not wrongly_binaries, (f"{wrongly_binaries} have no `if __name__ == \"__main__\":` "
                                  "but would become py_binaries; add them to NOT_ENTRY_POINTS "
                                  "in runners/BUILD")
    hidden = sorted(scripts & not_entry_points)
    assert not hidden, f"{hidden} are entry points; remove them from NOT_ENTRY_POINTS"
    names = [os.path.basename(p) for p in scripts]
    assert len(names) == len(set(names)), f"two entry points would share a target name: {names}"
    assert {"train.py", "evaluate.py", "generate.py", "benchmark.py"} <= set(names)


def test_runner_data_files_are_flagfiles():
    """runners/BUILD gives the runners the `**/*.flags` files and the `tools/*.sh` scripts; any
    other data would be missing."""
    other = [p for p in files("runners") if not p.endswith((".py", ".flags", "/BUILD"))
             and not (p.startswith("runners/tools/") and p.endswith(".sh") and p.count("/") == 2)]
    assert not other, f"{other} are in no Bazel target; extend the data glob of runners/BUILD"


def test_every_test_file_has_its_own_target_name():
    tests = [p for p in files("tests", ".py") if os.path.basename(p).startswith("test_")]
    assert len(tests) > 20
    by_name = {}
    for path in tests:
        by_name.setdefault(os.path.basename(path), []).append(path)
    clashes = {name: paths for name, paths in by_name.items() if len(paths) > 1}
    assert not clashes, f"test files that would be one //tests target (and one pytest module): {clashes}"


def test_the_exceptions_table_names_test_files_and_known_attributes():
    exceptions = build_constants("tests")["EXCEPTIONS"]
    assert exceptions, "tests/BUILD has an EXCEPTIONS table"
    for src, attributes in exceptions.items():
        assert os.path.isfile(os.path.join(REPO, "tests", src)), (
            f"EXCEPTIONS in tests/BUILD names tests/{src}, which does not exist")
        assert re.fullmatch(r"(\w+/)*test_\w+\.py", src), src
        assert set(attributes) <= TEST_ATTRIBUTES, (src, attributes)
        assert attributes.get("size", "medium") in ("small", "medium", "large", "enormous")


def test_test_helpers_are_where_the_test_targets_take_them_from():
    """Every test target has tests/conftest.py and the :support library (tests/support/**)."""
    misplaced = [p for p in files("tests", ".py")
                 if not os.path.basename(p).startswith("test_")
                 and not p.startswith("tests/support/")
                 and p not in ("tests/conftest.py", "tests/pytest_main.py")]
    assert not misplaced, (f"{misplaced}: a test helper module belongs in tests/support/ and "
                           "pytest set-up in tests/conftest.py, else Bazel's tests miss it")
