"""Every example in the package's doc strings runs and shows what it says (``doctest``), run as
a user's code would be: a class an example defines belongs to ``__main__``, not to the library
(scratchgrad treats its own ``Function`` subclasses differently from a user's)."""

import doctest
import importlib
import pkgutil

import pytest

import scratchgrad

MODULES = sorted(
    name
    for _, name, _ in pkgutil.walk_packages(scratchgrad.__path__, "scratchgrad.")
    if not name.endswith("__main__")  # (the command line: running it is its own test)
)


def test_the_package_has_examples():
    found = doctest.DocTestFinder()
    examples = sum(
        len(test.examples) for name in MODULES for test in found.find(importlib.import_module(name))
    )
    assert examples > 1000


@pytest.mark.parametrize("name", MODULES)
def test_doc_string_examples_run_as_shown(name):
    module = importlib.import_module(name)
    result = doctest.testmod(module, extraglobs={"__name__": "__main__"}, report=True)
    assert result.failed == 0, f"{result.failed} of {name}'s examples failed (printed above)"
