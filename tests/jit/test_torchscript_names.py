"""PyTorch's TorchScript names under scratchgrad.jit: pass-throughs that give the original's
results, each compared with what torch.jit gives on the same model and inputs."""

import typing

import numpy as np
import pytest
import torch

import scratchgrad as sg

LIBS = {"scratchgrad": sg, "torch": torch}


def model_class(lib):
    """A small module with an ``@jit.ignore``d method and an ``@jit.export``ed one."""
    nn, jit = lib.nn, lib.jit

    class Model(nn.Module):
        scale: jit.Final[float]

        def __init__(self):
            super().__init__()
            self.scale = 0.5
            self.linear = nn.Linear(3, 2)

        @jit.ignore
        def describe(self) -> str:
            return f"Model with {self.linear.out_features} outputs"

        @jit.export  # (not calling forward, which torch.jit.trace would then see twice)
        def doubled(self, x):
            return 2 * self.linear(x)

        def forward(self, x):
            hidden: list[int] = jit.annotate(list[int], [])
            hidden.append(x.shape[0])
            return self.linear(x).tanh() * self.scale

    return Model


def make_model(lib):
    """The model, with the same weights in both libraries."""
    model = model_class(lib)()
    rng = np.random.default_rng(0)
    with lib.no_grad():
        model.linear.weight.copy_(lib.from_numpy(rng.standard_normal((2, 3)).astype("f4")))
        model.linear.bias.copy_(lib.from_numpy(rng.standard_normal(2).astype("f4")))
    return model


def _inputs(lib):
    return lib.from_numpy(np.linspace(-1, 1, 12, dtype=np.float32).reshape(4, 3))


@pytest.mark.parametrize("how", ["script", "trace"])
def test_a_scripted_or_traced_module_gives_the_originals_results(how):
    outs = {}
    for name, lib in LIBS.items():
        model, x = make_model(lib), _inputs(lib)
        expected = model(x).tolist()
        made = lib.jit.script(model) if how == "script" else lib.jit.trace(model, x)
        outs[name] = made(x).tolist()
        assert np.allclose(outs[name], expected, atol=1e-6)
        assert sorted(made.state_dict()) == ["linear.bias", "linear.weight"]
        if how == "script":  # (tracing keeps forward only)
            assert made.doubled(x).tolist() == (2 * model.linear(x)).tolist()
            assert made.describe() == "Model with 2 outputs"
    assert np.allclose(outs["scratchgrad"], outs["torch"], atol=1e-6)


def test_script_returns_the_module_itself_and_it_trains():
    model = make_model(sg)
    scripted = sg.jit.script(model)
    assert scripted is model
    loss = scripted(_inputs(sg)).sum()
    loss.backward()
    assert model.linear.weight.grad is not None


def test_trace_runs_the_example_and_returns_the_function():
    calls = []

    def double(x, y=1.0):
        calls.append(x.shape)
        return x * 2 + y

    for lib in LIBS.values():
        calls.clear()
        traced = lib.jit.trace(double, lib.ones(2), check_trace=False)
        assert calls == [(2,)]  # it ran on the example
        assert traced(lib.tensor([1.0, 3.0])).tolist() == [3.0, 7.0]
    assert sg.jit.trace(double, (sg.ones(3),)) is double
    assert sg.jit.trace(double, (sg.ones(1),), example_kwarg_inputs={"y": 2.0}) is double
    with pytest.raises(RuntimeError, match="example_inputs"):
        sg.jit.trace(double)


def test_trace_raises_what_the_function_raises_on_the_example():
    with pytest.raises(RuntimeError, match="matmul"):
        sg.jit.trace(lambda x: x @ x, sg.ones(2, 3))


def test_decorators_pass_through_unchanged():
    def f(x):
        return x + 1

    for lib in LIBS.values():
        assert lib.jit.ignore(f)(1) == lib.jit.ignore(drop=True)(f)(1) == 2
        assert lib.jit.unused(f)(1) == lib.jit.export(f)(1) == 2
    for decorate in (sg.jit.ignore, sg.jit.ignore(drop=True), sg.jit.unused, sg.jit.export):
        assert decorate(f) is f
    assert sg.jit.script(f) is f


def test_mode_queries_annotate_and_final_are_torchs():
    for lib in LIBS.values():
        assert lib.jit.is_scripting() is False and lib.jit.is_tracing() is False
        assert lib.jit.annotate(typing.List[int], [3]) == [3]  # noqa: UP006 (as programs write)
        assert lib.jit.Final is typing.Final


def test_fork_and_wait_give_the_functions_result():
    for lib in LIBS.values():
        future = lib.jit.fork(lambda x, k: x * k, lib.ones(2), k=3)
        assert lib.jit.wait(future).tolist() == future.wait().tolist() == [3.0, 3.0]


def test_save_and_load_name_the_alternative(tmp_path):
    model = make_model(sg)
    with pytest.raises(NotImplementedError, match=r"jit\.save: .*scratchgrad\.save"):
        sg.jit.save(sg.jit.script(model), tmp_path / "model.pt")
    with pytest.raises(NotImplementedError, match=r"jit\.load: .*safetensors"):
        sg.jit.load(tmp_path / "model.pt")
