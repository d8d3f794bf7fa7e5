"""The Python files of the repository's packages, for the tests that read the code itself
(package boundaries, class sizes, parameter counts, the atomic writers). Under Bazel the files
are those of the test's runfiles, i.e. the sources.

Example:
  >>> modules("txl_tf/layers")[:1]
  ['txl_tf/layers/__init__.py']
"""
import os

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def modules(package, root=REPO):
    """`root`-relative paths of the .py files under `package` (a folder of `root`), sorted."""
    found = []
    for directory, dirs, names in os.walk(os.path.join(root, package)):
        dirs[:] = sorted(d for d in dirs if d != "__pycache__")
        rel = os.path.relpath(directory, root).replace(os.sep, "/")
        found += [f"{rel}/{n}" for n in sorted(names) if n.endswith(".py")]
    return found
