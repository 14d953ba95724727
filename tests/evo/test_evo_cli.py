"""`scratchgrad evolve`: the outputs it promises, on a tiny run."""

import numpy as np
import pytest

import scratchgrad as sg
from scratchgrad import evo
from scratchgrad.cli import main


def test_evolve_writes_a_loadable_policy_and_a_curve(tmp_path, capsys):
    args = ["evolve", "cartpole", "--generations", "2", "--population", "16", "--seed", "1"]
    assert main([*args, "--out", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "generation   2: best" in out and "over 100 fresh episodes" in out
    policy = evo.MLPPolicy((4, 32, 2))
    module = policy.module()
    module.load_state_dict(sg.load(tmp_path / "cartpole_openai-es.safetensors"))
    # the saved policy is run()'s final solution for the same arguments
    result = evo.run("CartPole-v1", generations=2, popsize=16, seed=1)
    expected = policy.module(result.best_params).state_dict()
    for name, tensor in module.state_dict().items():
        np.testing.assert_array_equal(tensor.numpy(), expected[name].numpy())
    assert (tmp_path / "cartpole_openai-es_curve.png").stat().st_size > 1000


def test_evolve_help_lists_the_tasks(capsys):
    with pytest.raises(SystemExit):
        main(["evolve", "--help"])
    text = capsys.readouterr().out
    assert all(name in text for name in ("cartpole", "CartPole-v1", "acrobot", "pendulum"))
