"""The Bazel targets stay in step with the files (README "Build and test with Bazel").

The BUILD files and the `.bzl` macros they load are Starlark in the Python subset this project
uses, so they are executed here with stand-in rule functions that record each target (no Bazel
needed); `glob` is evaluated as Bazel does (package-relative, `**`, `exclude`, not descending
into sub-packages). Checked:
  * every `tests/test_*.py` has a `py_test`, and every `runners/` entry point (a file ending
    with `if __name__ == "__main__":`) a `py_binary`;
  * every `.py` file of `txl_tf/`, `tf_records/`, `runners/` and `tests/` belongs to a target
    (for the libraries: to `//txl_tf`, `//tf_records` or `//runners`), and no target names a
    file that does not exist;
  * each target's `deps` provide the project modules its files import (strict direct deps), the
    libraries keep the layering of CONTRIBUTING.md, and a test or runner that starts a runner
    with `subprocess` has that runner's `py_binary` in its `data` or `deps`.
Failures name the file and the BUILD entry to add.
"""
import ast
import os
import re

import pytest

# The source tree, also under `bazel test` (where this file is a runfiles symlink into it; the
# py_test is tagged "external" so that Bazel never serves a cached result).
REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.realpath(__file__))))
BUILD_NAMES = ("BUILD", "BUILD.bazel")
PROJECT_PACKAGES = ("txl_tf", "tf_records", "runners")
MAIN_GUARD = re.compile(r"^if __name__ == ['\"]__main__['\"]:", re.M)


# ---------------------------------------------------------------------------------------------
# A small Starlark evaluator for BUILD files.

def _ignored_dirs():
    """Top-level directories Bazel skips (.bazelignore), plus hidden ones and bazel-* links."""
    ignored = set()
    path = os.path.join(REPO, ".bazelignore")
    if os.path.exists(path):
        with open(path) as f:
            ignored = {line.strip().strip("/") for line in f
                       if line.strip() and not line.startswith("#")}
    return ignored


def _build_file(directory):
    for name in BUILD_NAMES:
        if os.path.isfile(os.path.join(directory, name)):
            return os.path.join(directory, name)
    return None


def _packages():
    """Package name ("" for the root) -> BUILD file path, for the whole workspace."""
    ignored = _ignored_dirs()
    found = {}
    for directory, dirs, _ in os.walk(REPO):
        rel = os.path.relpath(directory, REPO).replace(os.sep, "/")
        rel = "" if rel == "." else rel
        dirs[:] = sorted(d for d in dirs
                         if not d.startswith((".", "bazel-")) and d != "__pycache__"
                         and (f"{rel}/{d}" if rel else d) not in ignored)
        build = _build_file(directory)
        if build:
            found[rel] = build
    return found


def _glob_regex(pattern):
    out = ""
    i = 0
    while i < len(pattern):
        if pattern.startswith("**/", i):
            out += "(?:.*/)?"
            i += 3
        elif pattern.startswith("**", i):
            out += ".*"
            i += 2
        elif pattern[i] == "*":
            out += "[^/]*"
            i += 1
        elif pattern[i] == "?":
            out += "[^/]"
            i += 1
        else:
            out += re.escape(pattern[i])
            i += 1
    return re.compile(out + r"\Z")


def _package_files(package):
    """Files of a package (package-relative), not descending into sub-packages."""
    root = os.path.join(REPO, package)
    files = []
    for directory, dirs, names in os.walk(root):
        dirs[:] = [d for d in dirs if d != "__pycache__"
                   and not _build_file(os.path.join(directory, d))]
        rel = os.path.relpath(directory, root).replace(os.sep, "/")
        files += [n if rel == "." else f"{rel}/{n}" for n in names]
    return sorted(files)


def _label(package, label):
    """Canonical `//package:name` of a label written in `package`."""
    if label.startswith("@"):
        return label
    if label.startswith(":"):
        return f"//{package}{label}"
    if label.startswith("//"):
        return label if ":" in label else f"{label}:{label.rsplit('/', 1)[-1]}"
    return f"//{package}:{label}"


class _Native:
    """`native` of a .bzl file: rules record into the package being evaluated."""

    def __init__(self, evaluator):
        self._evaluator = evaluator

    def package_name(self):
        return self._evaluator.package

    def __getattr__(self, rule):
        return self._evaluator.rule(rule)


class _BuildEvaluator:
    def __init__(self):
        self.targets = {}  # "//pkg:name" -> dict(kind, package, srcs, deps, data, main)
        self.package = None
        self.bzl_cache = {}

    def rule(self, kind):
        def record(name=None, srcs=(), deps=(), data=(), main=None, **kwargs):
            if name is None:
                return None
            package = self.package
            srcs = [s if s.startswith((":", "//", "@")) else f"{package}/{s}".lstrip("/")
                    for s in srcs]
            self.targets[f"//{package}:{name}"] = dict(
                kind=kind, package=package, srcs=srcs,
                deps=[_label(package, d) for d in deps],
                data=[_label(package, d) for d in data],
                main=main, **kwargs)
        return record

    def glob(self, include, exclude=(), exclude_directories=1, allow_empty=True):
        files = _package_files(self.package)
        inc = [_glob_regex(p) for p in include]
        exc = [_glob_regex(p) for p in exclude]
        return [f for f in files
                if any(r.match(f) for r in inc) and not any(r.match(f) for r in exc)]

    def _scope(self):
        evaluator = self

        class Scope(dict):
            def __missing__(self, name):  # any other rule or function: a recorder
                return evaluator.rule(name)

        # One dict for globals and locals (comprehensions see the BUILD file's names); every
        # unknown name is a rule, so the few builtins Starlark has are given explicitly.
        scope = Scope(glob=self.glob, native=_Native(self), select=lambda d: d,
                      len=len, sorted=sorted, list=list, dict=dict, str=str, range=range,
                      enumerate=enumerate, zip=zip, __builtins__={})
        scope["load"] = lambda path, *symbols, **aliases: self.load(scope, path, symbols,
                                                                    aliases)
        return scope

    def load(self, scope, path, symbols, aliases):
        module = {}
        if not path.startswith("@"):
            package, _, name = path.lstrip("/").rpartition(":")
            package = self.package if path.startswith(":") else package
            bzl = os.path.join(REPO, package, name)
            if bzl not in self.bzl_cache:
                namespace = self._scope()
                with open(bzl) as f:
                    exec(compile(f.read(), bzl, "exec"), namespace)
                self.bzl_cache[bzl] = namespace
            module = self.bzl_cache[bzl]
        for symbol in symbols:
            scope[symbol] = module.get(symbol) or self.rule(symbol)
        for alias, symbol in aliases.items():
            scope[alias] = module.get(symbol) or self.rule(symbol)

    def evaluate(self, package, build_file):
        self.package = package
        with open(build_file) as f:
            code = compile(f.read(), build_file, "exec")
        exec(code, self._scope())


_TARGETS = None


def targets():
    global _TARGETS
    if _TARGETS is None:
        evaluator = _BuildEvaluator()
        for package, build_file in sorted(_packages().items()):
            evaluator.evaluate(package, build_file)
        _TARGETS = evaluator.targets
    return _TARGETS


# ---------------------------------------------------------------------------------------------
# The repository's Python files and their imports.

def _py_files(top):
    out = []
    for directory, dirs, names in os.walk(os.path.join(REPO, top)):
        dirs[:] = sorted(d for d in dirs if d != "__pycache__" and not d.startswith("."))
        rel = os.path.relpath(directory, REPO).replace(os.sep, "/")
        out += [f"{rel}/{n}" for n in sorted(names) if n.endswith(".py")]
    return out


def _read(path):
    with open(os.path.join(REPO, path), encoding="utf-8") as f:
        return f.read()


def _entry_points():
    return [p for p in _py_files("runners") if MAIN_GUARD.search(_read(p))]


def _test_helpers():
    """Non-test modules of tests/ that test files import as top-level modules."""
    return {os.path.basename(p)[:-3]: p for p in _py_files("tests")
            if os.path.dirname(p) == "tests"
            and not os.path.basename(p).startswith("test_")
            and os.path.basename(p) not in ("conftest.py", "pytest_main.py")}


def _imports(path):
    """Project modules imported anywhere in a file: "txl_tf", "runners.x", a test helper, ..."""
    helpers = _test_helpers()
    found = set()
    for node in ast.walk(ast.parse(_read(path), path)):
        names = []
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            # `from runners import evaluation` needs txl_tf/inference/evaluation.py (the package comes
            # with it); `from txl_tf import TransformerXL` needs txl_tf/__init__.py.
            subs = [f"{node.module}.{a.name}" for a in node.names]
            names = [m for m in subs if _is_module(m)]
            if len(names) < len(subs):
                names.append(node.module)
        found |= {n for n in names if n.split(".")[0] in PROJECT_PACKAGES or n in helpers}
    return found


def _is_module(module):
    return any(os.path.exists(os.path.join(REPO, f)) for f in _module_files(module))


def _module_files(module):
    """Files that can provide `module` (a module file or a package's __init__.py)."""
    if module in _test_helpers():
        return {_test_helpers()[module]}
    base = module.replace(".", "/")
    return {f"{base}.py", f"{base}/__init__.py"}


def _owners(path):
    return [label for label, t in targets().items() if path in t["srcs"]]


def _provider(module):
    """The label of the target that provides a project module (None if no file or target)."""
    parts = module.split(".")
    for i in range(len(parts), 0, -1):
        files = [f for f in _module_files(".".join(parts[:i]))
                 if os.path.exists(os.path.join(REPO, f))]
        if files:
            owners = _owners(files[0])
            libraries = [o for o in owners if targets()[o]["kind"] == "py_library"]
            return (libraries or owners or [None])[0]
    return None


def _short(label, package=None):
    """`//txl_tf:txl_tf` -> `//txl_tf`; `//tests:x` -> `:x` in package tests."""
    if package is not None and label.startswith(f"//{package}:"):
        return label[len(package) + 2:]
    pkg, _, name = label.partition(":")
    return pkg if pkg.rsplit("/", 1)[-1] == name else label


def _suggest_deps(path, package):
    labels = {_short(_provider(m), package) for m in _imports(path)} - {None}
    return sorted(labels, key=lambda lab: (not lab.startswith(":"), lab))


def _stanza(kind, **attrs):
    lines = [f"{kind}("] + [f"    {k} = {v!r},".replace("'", '"') for k, v in attrs.items() if v]
    return "\n".join(lines + [")"])


# ---------------------------------------------------------------------------------------------
# The checks.

def test_build_files_evaluate():
    all_targets = targets()
    assert "//txl_tf:txl_tf" in all_targets and "//tf_records:tf_records" in all_targets
    assert "//runners:runners" in all_targets
    assert any(t["kind"] == "py_test" for t in all_targets.values())


@pytest.mark.parametrize("package", ["txl_tf", "tf_records"])
def test_library_has_every_module(package):
    library = targets()[f"//{package}:{package}"]
    missing = [p for p in _py_files(package) if p not in library["srcs"]]
    assert not missing, (f"{missing} are not in the srcs of //{package} ({package}/BUILD); "
                         "add them (the library globs **/*.py: is there a BUILD file in a "
                         "sub-directory?)")


def test_every_test_file_has_a_py_test():
    missing = [p for p in _py_files("tests")
               if os.path.basename(p).startswith("test_") and p.endswith(".py")
               and not any(targets()[o]["kind"] == "py_test" for o in _owners(p))]
    hints = "\n\n".join(
        _stanza("pytest_test", name=os.path.basename(p)[:-3], deps=_suggest_deps(p, "tests"))
        for p in missing)
    assert not missing, (f"test files without a Bazel py_test: {missing}; add to tests/BUILD "
                         f"(with the deps the file imports):\n\n{hints}")


def test_every_runner_entry_point_has_a_py_binary():
    missing = [p for p in _entry_points()
               if not any(targets()[o]["kind"] == "py_binary" for o in _owners(p))]
    hints = "\n\n".join(
        _stanza("py_binary", name=os.path.basename(p)[:-3], srcs=[os.path.basename(p)],
                python_version="PY3", deps=_suggest_deps(p, "runners")) for p in missing)
    assert not missing, (f"runner entry points without a Bazel py_binary: {missing}; add the name "
                         f"to ENTRY_POINTS in runners/BUILD and:\n\n{hints}")


def test_py_binaries_are_entry_points_and_not_in_libraries():
    entry_points = set(_entry_points())
    problems = []
    for label, t in targets().items():
        if t["kind"] != "py_binary" or not t["package"].startswith("runners"):
            continue
        main = t["srcs"][0] if len(t["srcs"]) == 1 else f"{t['package']}/{t['main']}"
        if main not in entry_points:
            problems.append(f"{label}: {main} has no `if __name__ == \"__main__\":`")
        libraries = [o for o in _owners(main) if targets()[o]["kind"] == "py_library"]
        if libraries:
            problems.append(f"{label}: {main} is also in {libraries} (list it in ENTRY_POINTS)")
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize("top", ["txl_tf", "tf_records", "runners", "tests"])
def test_every_python_file_belongs_to_a_target(top):
    missing = [p for p in _py_files(top)  # (test files: test_every_test_file_has_a_py_test)
               if not _owners(p) and os.path.basename(p) != "conftest.py"
               and not (top == "tests" and os.path.basename(p).startswith("test_"))]
    assert not missing, (f"Python files in no Bazel target: {missing}; a module of tests/ that "
                         "tests import needs a py_library (testonly, imports = [\".\"]) in "
                         "tests/BUILD, a runner module belongs to //runners")


def test_no_target_names_a_missing_file():
    stale = [f"{label}: {src}" for label, t in targets().items() for src in t["srcs"]
             if not src.startswith((":", "//", "@")) and not os.path.exists(os.path.join(REPO, src))]
    assert not stale, f"Bazel targets name files that do not exist (renamed or deleted?): {stale}"


def test_deps_provide_the_imported_modules():
    all_targets = targets()
    problems = []
    for label, t in sorted(all_targets.items()):
        if t["kind"] not in ("py_library", "py_binary", "py_test"):
            continue
        provided = set(t["srcs"])
        for dep in t["deps"]:
            provided |= set(all_targets.get(dep, {}).get("srcs", ()))
        for src in t["srcs"]:
            if not src.endswith(".py") or not os.path.exists(os.path.join(REPO, src)):
                continue
            for module in sorted(_imports(src)):
                # `import txl_tf.config.Foo`-like names: the longest prefix that is a module.
                parts = module.split(".")
                candidates = [".".join(parts[:i]) for i in range(len(parts), 0, -1)]
                existing = [c for c in candidates if _is_module(c)]
                if not existing or any(f in provided for f in _module_files(existing[0])):
                    continue
                problems.append(f"{label}: {src} imports {existing[0]}, but no dep provides it; "
                                f"add {_short(_provider(existing[0]), t['package'])} to its deps")
    assert not problems, "\n".join(problems)


def test_layering_of_the_libraries():
    deps = {label: set(t["deps"]) for label, t in targets().items()}
    assert not deps["//txl_tf:txl_tf"] & {"//tf_records:tf_records", "//runners:runners"}
    assert not deps["//tf_records:tf_records"] & {"//txl_tf:txl_tf", "//runners:runners"}


def test_started_runners_are_in_the_runfiles():
    """A test or runner that starts `runners/<name>.py` with subprocess has it in data/deps."""
    entry_points = {os.path.basename(p)[:-3]: p for p in _entry_points()}
    problems = []
    for label, t in sorted(targets().items()):
        if t["kind"] not in ("py_test", "py_binary"):
            continue
        for src in t["srcs"]:
            if (os.path.basename(src) == "pytest_main.py"
                    or not os.path.exists(os.path.join(REPO, src))):
                continue
            text = _read(src)
            if "subprocess" not in text:
                continue
            started = {m for m in re.findall(r"\b(\w+)\.py\b", text)
                       if m in entry_points and entry_points[m] != src}
            present = set(t["data"]) | set(t["deps"])
            for name in sorted(started):
                if f"//runners:{name}" not in present:
                    problems.append(f"{label}: {src} starts runners/{name}.py; add "
                                    f"\"{_short(f'//runners:{name}', t['package'])}\" to its data")
    assert not problems, "\n".join(problems)
