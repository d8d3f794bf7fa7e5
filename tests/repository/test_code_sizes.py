"""Classes small enough to read (CONTRIBUTING.md: one concept per file): no class of txl_tf/,
tf_records/, runners/ or untrusted_files/ spans more than MAX_CLASS_LINES lines, docstring and
methods included (ast: end_lineno - lineno + 1). A class that grows past it has more than one
job: its parts go to collaborators whose names say what they hold.
(The parameter counts of every function: tests/repository/test_function_size.py.)
Under Bazel the files are those of the test's runfiles, i.e. the libraries' sources.
"""
import ast
import os

import pytest

from package_files import REPO, modules
PACKAGES = ("txl_tf", "tf_records", "runners", "untrusted_files")
MAX_CLASS_LINES = 250


def class_spans(source, path="<source>"):
    """[(class name, first line, lines)] of every class in `source`, nested ones included."""
    tree = ast.parse(source, path)
    return [(node.name, node.lineno, node.end_lineno - node.lineno + 1)
            for node in ast.walk(tree) if isinstance(node, ast.ClassDef)]


def long_classes(path):
    """`path:line NAME spans N lines` for each class of the module over MAX_CLASS_LINES."""
    with open(os.path.join(REPO, path), encoding="utf-8") as f:
        spans = class_spans(f.read(), path)
    return [f"{path}:{line} {name} spans {lines} lines" for name, line, lines in spans
            if lines > MAX_CLASS_LINES]


@pytest.mark.parametrize("package", PACKAGES)
def test_no_class_spans_more_than_250_lines(package):
    paths = modules(package)
    assert f"{package}/__init__.py" in paths, package
    found = [line for path in paths for line in long_classes(path)]
    assert not found, (f"classes over {MAX_CLASS_LINES} lines (split them by job):\n"
                       + "\n".join(found))


def test_the_check_measures_a_class_from_its_line_to_its_last():
    body = "".join(f"    x{i} = {i}\n" for i in range(MAX_CLASS_LINES - 1))
    source = (f"import os\n\n\nclass Big:\n{body}\n\nclass Small:\n"
              "    class Inner:\n        pass\n")
    assert class_spans(source) == [("Big", 4, MAX_CLASS_LINES), ("Small", 6 + MAX_CLASS_LINES, 3),
                                   ("Inner", 7 + MAX_CLASS_LINES, 2)]
    longer = source.replace("class Big:\n", "class Big:\n    y = 0\n")
    assert [name for name, _, lines in class_spans(longer) if lines > MAX_CLASS_LINES] == ["Big"]

