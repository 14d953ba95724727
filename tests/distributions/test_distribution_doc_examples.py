"""The doc strings' examples of scratchgrad.distributions run and print what they say."""

import doctest
import importlib

import pytest

MODULES = [
    "",
    ".bernoulli",
    ".binomial",
    ".categorical",
    ".cauchy",
    ".constraints",
    ".distribution",
    ".exponential",
    ".gamma",
    ".geometric",
    ".independent",
    ".kl",
    ".laplace",
    ".lkj_cholesky",
    ".multivariate_normal",
    ".normal",
    ".one_hot_categorical",
    ".poisson",
    ".student_t",
    ".transformed_distribution",
    ".transforms",
    ".uniform",
    ".utils",
    ".von_mises",
    ".wishart",
]


@pytest.mark.parametrize("name", MODULES)
def test_doc_examples(name):
    module = importlib.import_module("scratchgrad.distributions" + name)
    result = doctest.testmod(module)
    assert result.failed == 0 and result.attempted > 0
