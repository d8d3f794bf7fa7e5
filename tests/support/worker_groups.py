"""Which tests run together on one xdist worker.

pytest-xdist's default (`--dist load`) hands the first quarter of the suite out one test at a
time, alternating between the workers, and later tests in chunks, so the tests of a module
often end up on both workers, and a module-scoped fixture (a trained model, an export, a
compiled generator) is then made twice, once in each worker. Here every module whose tests
share a fixture of module, class or package scope is one work unit that runs on one worker, so
such a fixture is made once per run; every other test stays a unit of its own, and the larger
units are handed out first (xdist's load-scope scheduling), so the workers still end together.

xdist's own `--dist loadgroup` would do it with `xdist_group` marks, but pytest 9.2 ignores how
xdist 3.8 writes the group into a test's id. So the workers, which collect the tests, write the
grouped modules into the run's directory (`record`), and the controller's scheduler
(`ModuleScheduling`, built by tests/conftest.py's `pytest_xdist_make_scheduler`) reads them
when it splits the collection into units. tests/conftest.py's two hooks call `on_collection`
and `make_scheduler`.
"""
import collections
import json
import os
from typing import Iterable

SHARED_SCOPES = ("module", "class", "package")
RECORD = "worker_groups.json"


def module_of(nodeid: str) -> str:
    """The test file of a node id, e.g. "tests/serving/test_export.py"."""
    return nodeid.split("::", 1)[0]


def shared_fixture_modules(items: Iterable) -> set:
    """The modules (`module_of`) in which at least two of `items` use one fixture definition
    of a scope in SHARED_SCOPES."""
    users = collections.defaultdict(collections.Counter)
    for item in items:
        info = getattr(item, "_fixtureinfo", None)
        if info is None:
            continue
        for definitions in info.name2fixturedefs.values():
            if definitions and definitions[-1].scope in SHARED_SCOPES:
                users[module_of(item.nodeid)][id(definitions[-1])] += 1
    return {module for module, counts in users.items() if max(counts.values()) >= 2}


def record(items: Iterable, run_dir: str) -> set:
    """Writes `shared_fixture_modules(items)` to run_dir/RECORD (atomically: every worker writes
    the same list) and returns them."""
    modules = shared_fixture_modules(items)
    path = os.path.join(run_dir, RECORD)
    temporary = f"{path}.{os.getpid()}"
    with open(temporary, "w") as f:
        json.dump(sorted(modules), f)
    os.replace(temporary, path)
    return modules


def recorded(run_dir: str) -> set:
    """What `record` wrote into run_dir (nothing recorded: no group)."""
    try:
        with open(os.path.join(run_dir, RECORD)) as f:
            return set(json.load(f))
    except FileNotFoundError:
        return set()


def scope_of(nodeid: str, grouped: set) -> str:
    """The work unit of a test: its module when the module is grouped, else the test itself."""
    module = module_of(nodeid)
    return module if module in grouped else nodeid


def module_scheduling(config, log, run_dir: str):
    """xdist's load-scope scheduling with `scope_of` as its units (the grouped modules read
    from run_dir once every worker has collected)."""
    from xdist.scheduler import LoadScopeScheduling

    class ModuleScheduling(LoadScopeScheduling):
        grouped = None

        def _split_scope(self, nodeid: str) -> str:
            if self.grouped is None:
                self.grouped = recorded(run_dir)
            return scope_of(nodeid, self.grouped)

    return ModuleScheduling(config, log)


def on_collection(config, items) -> None:
    """pytest_collection_modifyitems: in an xdist worker, `record` into the run's directory
    (the parent of the worker's basetemp)."""
    if os.environ.get("PYTEST_XDIST_WORKER"):
        record(items, str(config._tmp_path_factory.getbasetemp().parent))


def make_scheduler(config, log):
    """pytest_xdist_make_scheduler: `module_scheduling` under xdist's default distribution
    (`-n N`, `--dist load`); None (xdist's own) for any other `--dist`."""
    if config.getoption("dist") != "load":
        return None
    return module_scheduling(config, log, str(config._tmp_path_factory.getbasetemp()))
