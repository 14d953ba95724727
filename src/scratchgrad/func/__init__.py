"""``scratchgrad.func``: composable function transforms, after ``torch.func``.

``vmap`` maps a function over a batch dim in one pass of batched operations; ``grad``,
``grad_and_value``, ``vjp``, ``jacrev``, ``hessian`` and the forward-mode ``jvp``,
``linearize`` and ``jacfwd`` differentiate functions; and
``functional_call`` with ``stack_module_state`` runs a module as a pure function of its
parameters, so a population of networks is one vmapped call.

>>> import scratchgrad as sg
>>> from scratchgrad.func import grad, vmap
>>> x = sg.tensor([[1.0, 2.0], [3.0, 4.0]])
>>> vmap(grad(lambda row: (row**2).sum()))(x)  # a gradient per row
tensor([[2., 4.],
        [6., 8.]])
"""

from scratchgrad.func.batching import vmap
from scratchgrad.func.module_state import functional_call, stack_module_state
from scratchgrad.func.transforms import (
    grad,
    grad_and_value,
    hessian,
    jacfwd,
    jacrev,
    jvp,
    linearize,
    vjp,
)

__all__ = [
    "functional_call",
    "grad",
    "grad_and_value",
    "hessian",
    "jacfwd",
    "jacrev",
    "jvp",
    "linearize",
    "stack_module_state",
    "vjp",
    "vmap",
]
