"""``scratchgrad.compiler`` against ``torch.compiler``: the same names, ``is_compiling`` true
exactly while a step or a compiled module records, ``disable`` handing back the function."""

import torch

import scratchgrad as sg


def test_the_names_are_torch_compilers():
    for name in sg.compiler.__all__:
        assert hasattr(torch.compiler, name), name
    assert sg.compiler.compile is sg.compile


def test_is_compiling_only_while_a_step_or_a_module_records():
    seen = []

    def step(x):
        seen.append(sg.compiler.is_compiling())
        return x + 1

    jitted = sg.jit(step)
    for _ in range(4):  # eager, two recordings, a replay (which runs no Python)
        jitted(sg.ones(2))
    assert seen == [False, True, True]

    class Net(sg.nn.Module):
        def forward(self, x):
            seen.append(sg.compiler.is_compiling())
            return x * 2

    seen.clear()
    net = sg.compile(Net())
    for _ in range(4):
        net(sg.ones(2))
    assert seen == [False, True, True]
    assert not sg.compiler.is_compiling() and not torch.compiler.is_compiling()


def test_disable_returns_the_function_as_pytorch_accepts_it():
    def log(x):
        return x

    assert sg.compiler.disable(log) is log
    assert sg.compiler.disable(recursive=False, reason="logging")(log) is log
    assert sg.compiler.reset() is None
