"""The packages import only in the allowed direction (CONTRIBUTING.md).

`txl_tf` never imports `tf_records`, `runners` or `absl.flags` (absl.logging is fine);
`tf_records` never imports `txl_tf` or `runners`; inside it, `vocab/` never imports `text/` (text
is encoded with a vocabulary, not the reverse). No module of either imports its own package root
(it imports the module that defines a name), and no two folders import each other, at any depth (nor a folder and a module of its parent).
Every module is parsed, and every import in it counts: module level, inside functions, and
`importlib.import_module("...")` with a literal name.
Under Bazel the files are those of the test's runfiles, i.e. the libraries' sources.
"""
import ast
import os
import re

import pytest

from package_files import REPO, modules
FORBIDDEN = {
    "txl_tf": ("tf_records", "runners", "absl.flags"),
    "tf_records": ("txl_tf", "runners"),
    "tf_records/vocab": ("tf_records.text",),
    # the bottom package both libraries read files from elsewhere with: the standard library only
    "untrusted_files": ("txl_tf", "tf_records", "runners", "absl", "tensorflow", "keras",
                        "numpy", "h5py"),
}


def imported_names(tree):
    """(line, dotted name) of everything the module imports; `from a import b` gives `a.b`."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield node.lineno, alias.name
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            for alias in node.names:
                yield node.lineno, f"{node.module}.{alias.name}"
        elif (isinstance(node, ast.Call) and node.args
              and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str)
              and getattr(node.func, "attr", getattr(node.func, "id", None))
              in ("import_module", "__import__")):
            yield node.lineno, node.args[0].value


def violations(path, forbidden):
    with open(os.path.join(REPO, path), encoding="utf-8") as f:
        tree = ast.parse(f.read(), path)
    return [f"{path}:{line} imports {name}" for line, name in imported_names(tree)
            if any(name == bad or name.startswith(bad + ".") for bad in forbidden)]


CASES = [(path, package) for package in FORBIDDEN for path in modules(package)]


def test_every_package_has_modules():
    for package in FORBIDDEN:
        assert f"{package}/__init__.py" in modules(package), package


@pytest.mark.parametrize("path,package", CASES, ids=[path for path, _ in CASES])
def test_module_imports_in_the_allowed_direction(path, package):
    found = violations(path, FORBIDDEN[package])
    assert not found, (f"{package}/ must not import {', '.join(FORBIDDEN[package])}:\n"
                       + "\n".join(found))


def test_the_check_sees_function_level_and_dynamic_imports(tmp_path):
    source = ("import os\n"
              "from absl import logging\n"
              "def f():\n"
              "    from absl import flags\n"
              "    import importlib\n"
              "    return importlib.import_module('runners.cli')\n")
    names = [name for _, name in imported_names(ast.parse(source))]
    assert names == ["os", "absl.logging", "absl.flags", "importlib", "runners.cli"]
    bad = tmp_path / "bad.py"
    bad.write_text(source)
    found = violations(str(bad), FORBIDDEN["txl_tf"])
    assert [line.split(" imports ")[1] for line in found] == ["absl.flags", "runners.cli"]


LIBRARIES = ("txl_tf", "tf_records", "untrusted_files")


@pytest.mark.parametrize("package", LIBRARIES)
def test_no_library_module_imports_runners(package):
    found = [line for path in modules(package) for line in violations(path, ("runners",))]
    assert not found, f"{package}/ must not import runners/:\n" + "\n".join(found)


LIBRARY = [path for path in modules("txl_tf") if not path.startswith("txl_tf/commands/")]


@pytest.mark.parametrize("path", LIBRARY)
def test_library_does_not_import_the_commands(path):
    """The commands (txl_tf/commands/) are built on the library, never the reverse: what a
    library module needs of a command (the named choices, txl_tf/devices/choices.py; the
    SavedModel writer, txl_tf/serving/) lives below both. Only the runners import commands."""
    found = violations(path, ("txl_tf.commands",))
    assert not found, ("txl_tf/ outside commands/ must not import txl_tf.commands:\n"
                       + "\n".join(found))


def test_the_library_check_covers_the_front_ends():
    assert "txl_tf/causal_lm/serving_export.py" in LIBRARY and "txl_tf/serving/module.py" in LIBRARY
    assert not any(path.startswith("txl_tf/commands/") for path in LIBRARY)


def command_calls():
    """(module path, function name, [(parameter, annotation text)]) of every public top-level
    function of txl_tf/commands/."""
    for path in modules("txl_tf/commands"):
        with open(os.path.join(REPO, path), encoding="utf-8") as f:
            tree = ast.parse(f.read(), path)
        for node in tree.body:
            if isinstance(node, ast.FunctionDef) and not node.name.startswith("_"):
                arguments = node.args.args + node.args.kwonlyargs
                yield path, node.name, [(a.arg, ast.unparse(a.annotation) if a.annotation
                                         else "") for a in arguments]


def test_command_calls_take_objects_not_callbacks():
    """The runners pass data in as objects of the seam (txl_tf/model/data_interfaces.py,
    ConfigTemplate, DataSource), never as functions the library calls back (the console sink `echo`
    aside)."""
    calls = list(command_calls())
    assert any(name == "evaluate_model" for _, name, _ in calls)
    callbacks = [f"{path}: {name}({arg}: {annotation})" for path, name, arguments in calls
                 for arg, annotation in arguments
                 if arg != "echo" and (arg.endswith("_fn") or re.search(r"Callable|Fn\b",
                                                                        annotation))]
    assert not callbacks, "callbacks into the caller:\n" + "\n".join(callbacks)


def test_the_package_roots_hold_folders_not_modules():
    """`txl_tf/` is folders that say what they hold (model, layers, storage, ...): its root holds
    only `__init__.py`, so a new module has to choose its folder."""
    root = [name for name in os.listdir(os.path.join(REPO, "txl_tf")) if name.endswith(".py")]
    assert root == ["__init__.py"], f"modules in the txl_tf/ root: {sorted(root)}"


# One name, one role: a package's own errors, and a command's two halves (runners/NAME.py, the
# entry point, and txl_tf/commands/NAME.py, its library half).
SHARED_ROLES = {"__init__.py", "errors.py"}


def repeated_names(paths):
    """{file name: paths} of the names that stand for different things among `paths`."""
    places = {}
    for path in paths:
        places.setdefault(os.path.basename(path), []).append(path)
    return {name: found for name, found in places.items()
            if len(found) > 1 and name not in SHARED_ROLES
            and sorted(found) != [f"runners/{name}", f"txl_tf/commands/{name}"]}


def test_no_module_name_means_two_things():
    """A module's file name says what it holds: the same name in two folders is the same role
    (see SHARED_ROLES), never two different things (an `export.py` that exports a vocabulary
    beside one that exports a model)."""
    paths = [p for package in ("txl_tf", "tf_records", "runners") for p in modules(package)]
    assert not repeated_names(paths), f"one file name for different things: {repeated_names(paths)}"


def test_the_name_check_sees_a_repeated_name():
    """The check is not vacuous: two `generation.py` are reported, a command's two halves and
    two packages' `errors.py` are not."""
    assert repeated_names(["txl_tf/causal_lm/generation.py", "txl_tf/inference/generation.py",
                           "runners/train.py", "txl_tf/commands/train.py",
                           "txl_tf/convert/errors.py", "tf_records/errors.py"]) == {
        "generation.py": ["txl_tf/causal_lm/generation.py", "txl_tf/inference/generation.py"]}
    assert repeated_names(["runners/train.py", "txl_tf/training/train.py"])


def own_root_imports(path, package):
    """`path:line imports NAME` for each import of `package`'s root itself (`import txl_tf`,
    `from txl_tf import TransformerXL`): a sibling is imported from its module, which names the
    real dependency; `from txl_tf import layers` (a folder or module of the package) is fine."""
    with open(os.path.join(REPO, path), encoding="utf-8") as f:
        tree = ast.parse(f.read(), path)
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [f"{path}:{node.lineno} imports {alias.name}" for alias in node.names
                      if alias.name == package]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module == package:
            found += [f"{path}:{node.lineno} imports {package}.{alias.name}" for alias in node.names
                      if not (os.path.isdir(os.path.join(REPO, package, alias.name))
                              or os.path.isfile(os.path.join(REPO, package, alias.name + ".py")))]
    return found


ROOT_CASES = [(path, package) for package in LIBRARIES for path in modules(package)
              if path != f"{package}/__init__.py"]


@pytest.mark.parametrize("path,package", ROOT_CASES, ids=[path for path, _ in ROOT_CASES])
def test_no_module_imports_its_own_package_root(path, package):
    found = own_root_imports(path, package)
    assert not found, (f"import the module that defines the name, not the {package} root:\n"
                       + "\n".join(found))


def test_the_root_check_sees_root_imports(tmp_path):
    bad = tmp_path / "bad.py"
    bad.write_text("import txl_tf\nfrom txl_tf import save_model, layers\nimport txl_tf.layers\n"
                   "def f():\n    from tf_records import PreparedData, atomic\n")
    assert [line.split(" imports ")[1] for line in own_root_imports(str(bad), "txl_tf")] == [
        "txl_tf", "txl_tf.save_model"]
    assert [line.split(" imports ")[1] for line in own_root_imports(str(bad), "tf_records")] == [
        "tf_records.PreparedData"]


def resolved(name, root=REPO):
    """The repository-relative path of what the dotted `name` imports: the deepest module
    (`a/b.py`) or folder (`a/b`) it names; None for a name outside the repository."""
    parts = name.split(".")
    for end in range(len(parts), 0, -1):
        path = "/".join(parts[:end])
        if os.path.isfile(os.path.join(root, path + ".py")):
            return path + ".py"
        if os.path.isdir(os.path.join(root, path)):
            return path
    return None


def folder_edges(package, root=REPO):
    """{(node, sibling node): first import line} for every import from a module under one child
    of a folder of `package` to a module under another child of the same folder, at every
    depth; a child is a folder or a module: txl_tf/inference -> txl_tf/devices,
    txl_tf/training/reporting -> txl_tf/training/checkpoints, tf_records/vocab ->
    tf_records/corpus_info.py (a folder importing a module of its parent, whose folder is then
    below it) and tf_records/prepare.py -> tf_records/records."""
    edges = {}
    for path in modules(package, root):
        with open(os.path.join(root, path), encoding="utf-8") as f:
            tree = ast.parse(f.read(), path)
        source = path.split("/")
        for line, name in imported_names(tree):
            target = resolved(name, root)
            if target is None:
                continue
            target = target.split("/")
            common = 0
            while (common < min(len(source), len(target)) - 1
                   and source[common] == target[common]):
                common += 1
            if common == 0 or source[common] == target[common]:
                continue  # another package, or the module's own folder or an ancestor of it
            edges.setdefault(("/".join(source[:common + 1]), "/".join(target[:common + 1])),
                             f"{path}:{line} imports {name}")
    return edges


def folder_cycles(edges):
    """The cycles of the folder graph, each as the import lines that close it."""
    graph = {}
    for source, target in edges:
        graph.setdefault(source, []).append(target)
    cycles, done = [], set()

    def visit(node, trail):
        if node in trail:
            ring = trail[trail.index(node):] + [node]
            cycles.append([edges[(a, b)] for a, b in zip(ring, ring[1:])])
            return
        if node in done:
            return
        for target in sorted(graph.get(node, ())):
            visit(target, trail + [node])
        done.add(node)

    for node in sorted(graph):
        visit(node, [])
    return cycles


@pytest.mark.parametrize("package", LIBRARIES)
def test_no_import_cycle_between_folders(package):
    """Folders that import each other are one concept in two places: each folder of txl_tf/
    and tf_records/ (at every depth) imports its sibling folders and the modules beside it in
    one direction only, so that one of the two lies below the other (the compilation choice in
    txl_tf/devices/, below training/ and inference/; tf_records/corpus_info.py below vocab/)."""
    cycles = folder_cycles(folder_edges(package))
    assert not cycles, "folders that import each other:\n" + "\n".join(
        " -> ".join(cycle) for cycle in cycles)


def test_the_folder_check_sees_a_cycle():
    edges = {("p/a", "p/b"): "p/a/x.py:1 imports p.b.y", ("p/b", "p/a"): "p/b/y.py:2 imports p.a.x",
             ("p/a/c", "p/a/d"): "p/a/c/z.py:3 imports p.a.d.w"}
    assert folder_cycles(edges) == [["p/a/x.py:1 imports p.b.y", "p/b/y.py:2 imports p.a.x"]]
    assert folder_cycles({key: line for key, line in edges.items() if key[0] != "p/b"}) == []


def test_the_folder_check_sees_a_folder_and_a_module_of_its_parent(tmp_path):
    """A module of a folder and a subfolder beside it that import each other are a cycle (the
    one tf_records/corpus_info.py and tf_records/vocab/ had); one direction is not, and neither
    are imports of a module's own folder or of another package."""
    files = {"p/__init__.py": "",
             "p/info.py": "from p.vocab import words\nimport os\n",
             "p/vocab/__init__.py": "",
             "p/vocab/words.py": "from p.info import FILE\nfrom p.vocab import rules\n"
                                 "import q.other\n",
             "p/vocab/rules.py": "import p\n",
             "q/other.py": ""}
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    edges = folder_edges("p", str(tmp_path))
    assert edges == {("p/info.py", "p/vocab"): "p/info.py:1 imports p.vocab.words",
                     ("p/vocab", "p/info.py"): "p/vocab/words.py:1 imports p.info.FILE",
                     ("p/vocab/words.py", "p/vocab/rules.py"):
                         "p/vocab/words.py:2 imports p.vocab.rules"}
    assert folder_cycles(edges) == [["p/info.py:1 imports p.vocab.words",
                                     "p/vocab/words.py:1 imports p.info.FILE"]]
    (tmp_path / "p/info.py").write_text("import os\n")
    assert folder_cycles(folder_edges("p", str(tmp_path))) == []
