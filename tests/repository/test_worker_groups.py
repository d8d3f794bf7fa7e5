"""tests/support/worker_groups.py: the modules whose tests share a module-, class- or
package-scoped fixture run on one xdist worker, every other test stays a unit of its own; and
the suite's own collection is grouped that way under `--dist loadgroup`."""
import itertools
import textwrap

import pytest

import worker_groups

pytest_plugins = ["pytester"]

SCOPES = ["function", "class", "module", "package", "session"]


def module_source(scope, users):
    """A test module with one fixture of `scope` used by `users` of its three tests (in a class
    when the scope is "class")."""
    tests = "\n".join(
        f"    def test_{i}(self{', shared' if i < users else ''}):\n        pass"
        for i in range(3))
    owner = "self" if scope == "class" else ""
    fixture = (f"@pytest.fixture(scope={scope!r})\n"
               f"def shared({owner}):\n    return object()\n")
    if scope == "class":
        return f"import pytest\n\n\nclass TestAll:\n{textwrap.indent(fixture, '    ')}\n{tests}\n"
    return f"import pytest\n\n\n{fixture}\n\nclass TestAll:\n{tests}\n"


@pytest.mark.parametrize("scope,users", list(itertools.product(SCOPES, [0, 1, 2, 3])))
def test_a_module_is_grouped_exactly_when_two_tests_share_a_fixture_of_wider_scope(
        pytester, scope, users):
    pytester.makepyfile(test_shared=module_source(scope, users),
                        test_plain="def test_a():\n    pass\n\ndef test_b():\n    pass\n")
    items, _ = pytester.inline_genitems()
    grouped = worker_groups.group_shared_fixture_modules(items)
    expected = scope in worker_groups.SHARED_SCOPES and users >= 2
    assert grouped == ({"test_shared.py"} if expected else set())
    for item in items:
        marker = item.get_closest_marker("xdist_group")
        if expected and item.nodeid.startswith("test_shared.py"):
            assert marker is not None and marker.args == ("test_shared.py",), item.nodeid
        else:
            assert marker is None, item.nodeid


def test_a_group_a_test_names_itself_is_kept(pytester):
    pytester.makepyfile(test_own=module_source("module", 3).replace(
        "class TestAll:", "@pytest.mark.xdist_group('mine')\nclass TestAll:"))
    items, _ = pytester.inline_genitems()
    assert worker_groups.group_shared_fixture_modules(items) == {"test_own.py"}
    assert {item.get_closest_marker("xdist_group").args for item in items} == {("mine",)}


def test_the_suite_runs_under_loadgroup(pytestconfig, request):
    """pyproject.toml's addopts ask for `--dist loadgroup`, and tests/conftest.py's hook has
    grouped this run's collection: a test carries its module's group exactly when its module
    shares a wider fixture."""
    assert "--dist loadgroup" in " ".join(pytestconfig.getini("addopts"))
    items = request.session.items
    shared = worker_groups.shared_fixture_modules(items)
    for item in items:
        marker = item.get_closest_marker("xdist_group")
        if worker_groups.module_of(item) in shared:
            assert marker is not None, item.nodeid
        elif marker is not None:
            assert marker.args != (worker_groups.module_of(item),), item.nodeid
