import sys
from pathlib import Path

import pytest

# op_table.py and other shared test helpers live beside the tests
sys.path.insert(0, str(Path(__file__).parent))


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    # Hypothesis's pytest plugin (6.170) wraps a parametrized test's settings in one more
    # layer on every run; after ~500 parameters, reading `settings.database` under its CI
    # profile (database=None, which it never caches) overflows the stack. Each run starts
    # again from the settings the decorator gave.
    test = getattr(item, "obj", None)
    test = getattr(test, "__func__", test)
    if hasattr(test, "_hypothesis_internal_use_settings"):
        original = test.__dict__.setdefault(
            "_scratchgrad_decorated_settings", test._hypothesis_internal_use_settings
        )
        test._hypothesis_internal_use_settings = original


def pytest_runtest_teardown(item: pytest.Item) -> None:
    # The first torch.compile turns torch.distributions' argument checks off for the whole
    # process (torch/_dynamo/eval_frame.py); the tests of distributions' errors compare with
    # them on, whichever test of a worker compiled first.
    distributions = sys.modules.get("torch.distributions")
    if distributions is not None:
        distributions.Distribution.set_default_validate_args(True)
