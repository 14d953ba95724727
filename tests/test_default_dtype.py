"""``set_default_dtype``: what PyTorch makes in the default floating dtype, scratchgrad makes in
it too (Python floats, the creation functions, layers' parameters, integer tensors turned
floating, optimizers' scalar state, the printed dtype), and a jitted step made under another
default records anew."""

import pytest

import scratchgrad as sg

torch = pytest.importorskip("torch")


@pytest.fixture(params=["float64", "float32", "float16"])
def default(request):
    """Each library's default dtype set to the parameter's, and set back after the test."""
    for lib in (sg, torch):
        lib.set_default_dtype(getattr(lib, request.param))
    yield request.param
    for lib in (sg, torch):
        lib.set_default_dtype(lib.float32)


MADE = {
    "a Python float": lambda lib: lib.tensor(1.5),
    "a list with a float": lambda lib: lib.tensor([1, 2.5]),
    "zeros": lambda lib: lib.zeros(2),
    "ones": lambda lib: lib.ones(2, 3),
    "empty": lambda lib: lib.empty(2),
    "full of a float": lambda lib: lib.full((2,), 1.5),
    "rand": lambda lib: lib.rand(2),
    "randn": lambda lib: lib.randn(2),
    "arange of floats": lambda lib: lib.arange(0.0, 3.0),
    "linspace": lambda lib: lib.linspace(0, 1, 3),
    "eye": lambda lib: lib.eye(2),
    "ints divided": lambda lib: lib.tensor([1, 2]) / lib.tensor([2, 4]),
    "exp of ints": lambda lib: lib.tensor([1, 2]).exp(),
    "ints times a float": lambda lib: lib.tensor([1, 2]) * 1.5,
    "a Linear's weight": lambda lib: lib.nn.Linear(2, 1).weight,
    "float()": lambda lib: lib.tensor([1, 2]).float(),
    "zeros in float32": lambda lib: lib.zeros(2, dtype=lib.float32),
    "arange of ints": lambda lib: lib.arange(3),
    "range of ints": lambda lib: lib.range(0, 2),  # (deprecated: it warns)
}


@pytest.mark.parametrize("made", MADE)
def test_what_is_made_has_pytorchs_dtype_under_each_default(default, made):
    ours, theirs = MADE[made](sg), MADE[made](torch)
    assert str(ours.dtype).split(".")[-1] == str(theirs.dtype).split(".")[-1]


def test_the_default_is_read_back_and_printed_as_pytorch_does(default):
    assert str(sg.get_default_dtype()) == str(torch.get_default_dtype()).replace(
        "torch.", "scratchgrad."
    )
    for dtype in ("float32", "float64"):
        ours = sg.tensor([1.5], dtype=getattr(sg, dtype))
        theirs = torch.tensor([1.5], dtype=getattr(torch, dtype))
        assert repr(ours).replace("scratchgrad", "torch") == repr(theirs)


def test_an_optimizers_scalar_state_follows_the_default_as_pytorchs(default):
    states = []
    for lib in (sg, torch):
        weight = lib.nn.Parameter(lib.ones(2, dtype=lib.float64))
        opt = lib.optim.NAdam([weight], lr=0.1)
        weight.sum().backward()
        opt.step()
        states.append(str(opt.state[weight]["mu_product"].dtype).split(".")[-1])
    assert states[0] == states[1]


def test_only_a_floating_dtype_can_be_the_default():
    """An integer dtype raises a TypeError, as PyTorch's does, and changes nothing."""
    with pytest.raises(TypeError, match=r"only floating-point types"):
        torch.set_default_dtype(torch.int64)
    with pytest.raises(TypeError, match=r"set_default_dtype: only floating dtypes .* int64"):
        sg.set_default_dtype(sg.int64)
    assert sg.get_default_dtype() == sg.float32


def test_a_jitted_step_records_anew_under_another_default():
    """Constants the step makes (``sg.zeros``, a Python float's tensor) take the default
    dtype: another default is another guard key, on the fast path too."""
    step = sg.jit(lambda x: x + sg.zeros(3) + sg.tensor(0.5))
    x = sg.ones(3, dtype=sg.float16)
    try:
        for default in ("float32", "float64", "float32"):
            sg.set_default_dtype(default)
            for _ in range(4):
                assert step(x).dtype == default
            assert step.fast is not None
    finally:
        sg.set_default_dtype(sg.float32)
    assert sum(map(len, step.recordings.values())) == 2
