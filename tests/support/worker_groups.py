"""Which tests run together on one xdist worker.

pytest-xdist's default (`--dist load`) hands consecutive tests to whichever worker is free, so
the tests of one module usually end up on both workers, and a module-scoped fixture (a trained
model, an export, a compiled generator) is then made twice, once in each worker. With
`--dist loadgroup` (pyproject.toml's addopts) the tests that carry the same `xdist_group` mark
run on one worker; `group_shared_fixture_modules` gives that mark to every module whose tests
share a fixture of module, class or package scope, so such a fixture is made once per run. The
other tests stay one work unit each, and xdist hands the larger groups out first, so the
workers still end together. Without xdist the mark does nothing.
"""
import collections
from typing import Iterable

import pytest

SHARED_SCOPES = ("module", "class", "package")


def module_of(item) -> str:
    """The test file of `item`'s node id, e.g. "tests/serving/test_export.py"."""
    return item.nodeid.split("::", 1)[0]


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
                users[module_of(item)][id(definitions[-1])] += 1
    return {module for module, counts in users.items() if max(counts.values()) >= 2}


def group_shared_fixture_modules(items: list) -> set:
    """Marks each test of a `shared_fixture_modules` module with `xdist_group(<its module>)`
    (unless it has a group of its own); returns those modules."""
    modules = shared_fixture_modules(items)
    for item in items:
        if module_of(item) in modules and item.get_closest_marker("xdist_group") is None:
            item.add_marker(pytest.mark.xdist_group(module_of(item)))
    return modules
