"""The `hypothesis` settings profiles of the property tests (docs/testing.md).

  ci (default): a fixed seed (derandomized) and a few examples per test, within the suite's
    time budget; the same cases on every run.
  long: many more random examples, for an occasional run: TXL_HYPOTHESIS_PROFILE=long.

tests/conftest.py loads the profile named by TXL_HYPOTHESIS_PROFILE (default ci).
"""
import os

from hypothesis import HealthCheck, settings

PROFILE_VARIABLE = "TXL_HYPOTHESIS_PROFILE"

settings.register_profile("ci", max_examples=12, derandomize=True, deadline=None,
                          database=None, suppress_health_check=[HealthCheck.too_slow])
settings.register_profile("long", max_examples=500, derandomize=False, deadline=None,
                          suppress_health_check=[HealthCheck.too_slow])


def load() -> str:
    """Loads the profile of TXL_HYPOTHESIS_PROFILE (default ci); returns its name."""
    name = os.environ.get(PROFILE_VARIABLE, "ci")
    settings.load_profile(name)
    return name
