"""The generated toy problems: shapes, geometry, class balance, noise and seeds."""

import numpy as np
import pytest

import scratchgrad as sg
from scratchgrad.datasets import circles, moons, spirals, xor

GENERATORS = {
    "xor": lambda **kw: xor(40, **kw),
    "moons": lambda **kw: moons(101, **kw),
    "circles": lambda **kw: circles(101, **kw),
    "spirals": lambda **kw: spirals(101, n_classes=3, **kw),
}


def numpy_pair(pair):
    X, y = pair
    assert isinstance(X, sg.Tensor) and isinstance(y, sg.Tensor)
    assert X.dtype == sg.float32 and y.dtype == sg.int64
    assert X.shape == (len(y), 2) and y.shape == (len(y),)
    return X.numpy(), y.numpy()


@pytest.mark.parametrize("name", GENERATORS)
def test_seeds(name):
    make = GENERATORS[name]
    first = numpy_pair(make(noise=0.1, seed=0))
    np.testing.assert_array_equal(first[0], numpy_pair(make(noise=0.1, seed=0))[0])
    assert not np.array_equal(first[0], numpy_pair(make(noise=0.1, seed=1))[0])
    sg.manual_seed(4)
    library = numpy_pair(make(noise=0.1))
    sg.manual_seed(4)
    np.testing.assert_array_equal(library[0], numpy_pair(make(noise=0.1))[0])


@pytest.mark.parametrize("name", GENERATORS)
def test_noise_is_gaussian_with_the_given_std(name):
    make = GENERATORS[name]
    kwargs = {} if name == "xor" else {"shuffle": False}
    clean, y = numpy_pair(make(seed=3, **kwargs))
    noisy, y_noisy = numpy_pair(make(seed=3, noise=0.25, **kwargs))
    np.testing.assert_array_equal(y, y_noisy)
    jitter = (noisy - clean).ravel()
    # 80 or more draws: the sample std of N(0, 0.25) is within 30% of 0.25 with near certainty.
    assert abs(jitter.std() - 0.25) < 0.075 and abs(jitter.mean()) < 0.1


@pytest.mark.parametrize("name", GENERATORS)
def test_errors(name):
    with pytest.raises(ValueError, match="noise"):
        GENERATORS[name](noise=-1.0)
    make = {"xor": xor, "moons": moons, "circles": circles, "spirals": spirals}[name]
    with pytest.raises(ValueError, match="n_samples"):
        make(-1)


def test_xor_truth_table():
    X, y = numpy_pair(xor())
    assert X.tolist() == [[0, 0], [0, 1], [1, 0], [1, 1]] and y.tolist() == [0, 1, 1, 0]
    X, y = numpy_pair(xor(10))
    assert y.tolist() == [0, 1, 1, 0, 0, 1, 1, 0, 0, 1]
    np.testing.assert_array_equal(y, X[:, 0] != X[:, 1])


def test_moons_geometry():
    X, y = numpy_pair(moons(101, shuffle=False))
    assert np.bincount(y).tolist() == [50, 51]
    upper, lower = X[y == 0], X[y == 1]
    np.testing.assert_allclose(np.hypot(*upper.T), 1, atol=1e-6)
    assert (upper[:, 1] >= -1e-7).all()
    np.testing.assert_allclose(np.hypot(lower[:, 0] - 1, lower[:, 1] - 0.5), 1, atol=1e-6)
    assert (lower[:, 1] <= 0.5 + 1e-7).all()


def test_circles_geometry():
    X, y = numpy_pair(circles(101, factor=0.3))
    assert np.bincount(y).tolist() == [50, 51]
    np.testing.assert_allclose(np.hypot(*X[y == 0].T), 1, atol=1e-6)
    np.testing.assert_allclose(np.hypot(*X[y == 1].T), 0.3, atol=1e-6)
    assert len(np.unique(X.round(5), axis=0)) == 101  # no point repeated
    with pytest.raises(ValueError, match="factor"):
        circles(factor=1.0)


@pytest.mark.parametrize(("n", "n_classes"), [(100, 2), (301, 3), (10, 4), (5, 1)])
def test_spirals_geometry(n, n_classes):
    X, y = numpy_pair(spirals(n, n_classes=n_classes, seed=0))
    counts = np.bincount(y, minlength=n_classes)
    assert counts.sum() == n and counts.max() - counts.min() <= 1
    radius = np.hypot(*X.T)
    assert radius.max() == pytest.approx(1, abs=1e-6) and radius.min() > 0
    # Arm k at radius r lies at angle 2 pi k / n_classes + 3 pi r (mod 2 pi).
    expected = 2 * np.pi * y / n_classes + 3 * np.pi * radius
    difference = np.angle(np.exp(1j * (np.arctan2(X[:, 1], X[:, 0]) - expected)))
    np.testing.assert_allclose(difference, 0, atol=1e-5)


def test_spirals_needs_a_class():
    with pytest.raises(ValueError, match="n_classes"):
        spirals(n_classes=0)


@pytest.mark.parametrize("make", [xor, moons, circles, spirals])
def test_no_samples(make):
    X, y = numpy_pair(make(0))
    assert X.shape == (0, 2) and y.shape == (0,)


@pytest.mark.parametrize("n", [1, 2, 7, 100])
def test_moons_and_circles_as_scikit_learn(n):
    sklearn_datasets = pytest.importorskip("sklearn.datasets")
    for ours, theirs, kwargs in [
        (moons, sklearn_datasets.make_moons, {}),
        (circles, sklearn_datasets.make_circles, {"factor": 0.5}),
    ]:
        X, y = numpy_pair(ours(n, shuffle=False, **kwargs))
        X_ref, y_ref = theirs(n, shuffle=False, **kwargs)
        np.testing.assert_allclose(X, X_ref, atol=1e-7)
        np.testing.assert_array_equal(y, y_ref)
