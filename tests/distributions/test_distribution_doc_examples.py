"""The doc strings' examples of scratchgrad.distributions run and print what they say."""

import doctest
import importlib

import pytest

MODULES = [
    "",
    ".bernoulli",
    ".categorical",
    ".constraints",
    ".distribution",
    ".exponential",
    ".independent",
    ".kl",
    ".laplace",
    ".multivariate_normal",
    ".normal",
    ".one_hot_categorical",
    ".uniform",
    ".utils",
]


@pytest.mark.parametrize("name", MODULES)
def test_doc_examples(name):
    module = importlib.import_module("scratchgrad.distributions" + name)
    result = doctest.testmod(module)
    assert result.failed == 0 and result.attempted > 0
