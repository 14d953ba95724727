"""The backend: no global side effect on import (its one warning filter concerns only its own
modules); the malloc opt-in; NumPy's float warnings silenced as PyTorch is silent."""

import subprocess
import sys
import textwrap


def test_import_leaves_malloc_alone():
    # Record every mallopt call made through ctypes while scratchgrad (and all it imports) loads.
    probe = textwrap.dedent(
        """
        import ctypes
        calls = []
        real_cdll = ctypes.CDLL

        class Recording(real_cdll):
            def __getattr__(self, name):
                if name == "mallopt":
                    return lambda *args: calls.append(args) or 1
                return super().__getattr__(name)

        ctypes.CDLL = Recording
        import scratchgrad, scratchgrad.nn, scratchgrad.optim, scratchgrad.train
        print(len(calls))
        from scratchgrad.backend import keep_freed_memory
        keep_freed_memory()
        print(len(calls))
        """
    )
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["0", "2"]  # none on import; the opt-in sets both thresholds


def test_the_examples_in_the_doc_strings_run():
    # in a process of their own: keep_freed_memory's example changes malloc for the process
    probe = "import doctest, sys; from scratchgrad import backend; print(doctest.testmod(backend))"
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert "failed=0" in out.stdout and "attempted=0" not in out.stdout, out.stdout


def test_inf_and_nan_results_are_silent_as_torchs_and_users_numpy_still_warns():
    """NumPy's floating-point warnings from scratchgrad's own array calls (eager ops, their
    backward, a jitted replay) are silenced; the same call in the user's code still warns. Run
    in a fresh interpreter: pytest resets the warning filters that importing the package sets."""
    program = """
import numpy as np
import scratchgrad as sg
x = sg.tensor([0.0, -1.0, 2.0], requires_grad=True)
(x.log() + x.sqrt() + 1 / x + x.log1p() + (x * 1000).exp() + x ** -1.0).sum().backward()
model = sg.nn.Linear(3, 1)
opt = sg.optim.SGD(model.parameters(), lr=0.1)

@sg.jit
def step(a):
    opt.zero_grad()
    loss = model(a).log().sum()
    loss.backward()
    opt.step()
    return loss

for _ in range(3):
    step(sg.tensor([[0.0, -1.0, 2.0]]))
print("silent")
np.log(np.zeros(1))
"""
    run = subprocess.run(
        [sys.executable, "-W", "error::RuntimeWarning", "-c", program],
        capture_output=True,
        text=True,
    )
    assert run.stdout == "silent\n", run.stderr
    assert run.stderr.rstrip().endswith("RuntimeWarning: divide by zero encountered in log")
