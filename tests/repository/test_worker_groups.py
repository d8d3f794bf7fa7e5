"""tests/support/worker_groups.py: under `-n 2` the tests of a module that share a module-,
class- or package-scoped fixture run on one xdist worker (the fixture made once), every other
test is a unit of its own. Checked on generated modules of every fixture scope and number of
users, and end to end through pytest-xdist in a child pytest."""
import itertools
import json
import os

import pytest

import worker_groups

pytest_plugins = ["pytester"]

SUPPORT = os.path.dirname(os.path.abspath(worker_groups.__file__))
SCOPES = ["function", "class", "module", "package", "session"]


def module_source(scope, users, tests=3):
    """A test module with one fixture of `scope` used by `users` of its `tests` tests (all in a
    class, where a class-scoped fixture is defined); each test appends its xdist worker and
    name to the file of the environment's WORKERS_FILE."""
    body = "\n".join(
        f"    def test_{i}(self{', shared' if i < users else ''}):\n"
        f"        note('test_{i}')" for i in range(tests))
    owner = "self" if scope == "class" else ""
    fixture = f"@pytest.fixture(scope={scope!r})\ndef shared({owner}):\n    return object()\n"
    note = ("def note(name):\n    with open(os.environ['WORKERS_FILE'], 'a') as f:\n"
            "        f.write(os.environ.get('PYTEST_XDIST_WORKER', '-') + ' ' + "
            "__name__ + ' ' + name + '\\n')\n")
    head = f"import os\n\nimport pytest\n\n\n{note}\n\n"
    if scope == "class":
        indented = "\n".join("    " + line if line else line for line in fixture.splitlines())
        return f"{head}class TestAll:\n{indented}\n\n{body}\n"
    return f"{head}{fixture}\n\nclass TestAll:\n{body}\n"


@pytest.mark.parametrize("scope,users", list(itertools.product(SCOPES, [0, 1, 2, 3])))
def test_a_module_is_grouped_exactly_when_two_tests_share_a_fixture_of_wider_scope(
        pytester, scope, users):
    pytester.makepyfile(test_shared=module_source(scope, users),
                        test_plain="def test_a():\n    pass\n")
    items, _ = pytester.inline_genitems()
    grouped = worker_groups.shared_fixture_modules(items)
    expected = scope in worker_groups.SHARED_SCOPES and users >= 2
    assert grouped == ({"test_shared.py"} if expected else set())
    for item in items:
        unit = worker_groups.scope_of(item.nodeid, grouped)
        in_group = expected and item.nodeid.startswith("test_shared.py")
        assert unit == ("test_shared.py" if in_group else item.nodeid)


def test_the_record_is_what_the_controller_reads(pytester, tmp_path):
    assert worker_groups.recorded(str(tmp_path)) == set()  # nothing recorded: no group
    pytester.makepyfile(test_shared=module_source("module", 2), test_plain=module_source("function", 0))
    items, _ = pytester.inline_genitems()
    assert worker_groups.record(items, str(tmp_path)) == {"test_shared.py"}
    assert worker_groups.recorded(str(tmp_path)) == {"test_shared.py"}
    assert os.listdir(tmp_path) == [worker_groups.RECORD]  # no temporary file left


CONFTEST = f"""
import sys
sys.path.insert(0, {SUPPORT!r})
import pytest
import worker_groups


def pytest_collection_modifyitems(config, items):
    worker_groups.on_collection(config, items)


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config, log):
    return worker_groups.make_scheduler(config, log)
"""


def test_two_workers_run_each_grouped_module_on_one_worker(pytester, tmp_path, monkeypatch):
    """A child `pytest -n 2` (the hooks of tests/conftest.py): the tests of the two modules that
    share a module fixture each ran on one worker, the module without one was spread over
    both, and the run's directory holds the record the controller read."""
    pytester.makeconftest(CONFTEST)
    pytester.makepyfile(test_one=module_source("module", 6, tests=6),
                        test_two=module_source("class", 6, tests=6),
                        test_free=module_source("function", 0, tests=40))
    workers_file = tmp_path / "workers.txt"
    monkeypatch.setenv("WORKERS_FILE", str(workers_file))
    basetemp = tmp_path / "run"
    result = pytester.runpytest_subprocess("-n", "2", "-p", "no:cacheprovider",
                                           f"--basetemp={basetemp}")
    result.assert_outcomes(passed=52)
    ran = [line.split() for line in workers_file.read_text().splitlines()]
    workers = {module: {w for w, m, _ in ran if m == module} for module in
               ("test_one", "test_two", "test_free")}
    assert len(workers["test_one"]) == 1 and len(workers["test_two"]) == 1, workers
    assert workers["test_free"] == {"gw0", "gw1"}, workers
    with open(basetemp / worker_groups.RECORD) as f:
        assert json.load(f) == ["test_one.py", "test_two.py"]
