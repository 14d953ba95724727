"""Optimizers and learning-rate schedulers, as ``torch.optim``.

>>> import scratchgrad as sg
>>> w = sg.tensor([3.0], requires_grad=True)
>>> opt = sg.optim.SGD([w], lr=0.25)
>>> sched = sg.optim.lr_scheduler.StepLR(opt, step_size=1, gamma=0.5)
>>> for _ in range(3):
...     opt.zero_grad()
...     (w * w).sum().backward()
...     opt.step()
...     sched.step()
>>> round(w.item(), 4)
0.9844
"""

from scratchgrad.optim import lr_scheduler, swa_utils
from scratchgrad.optim.adadelta import Adadelta
from scratchgrad.optim.adafactor import Adafactor
from scratchgrad.optim.adagrad import Adagrad
from scratchgrad.optim.adam import Adam, AdamW
from scratchgrad.optim.adamax import Adamax
from scratchgrad.optim.asgd import ASGD
from scratchgrad.optim.lbfgs import LBFGS
from scratchgrad.optim.nadam import NAdam, RAdam
from scratchgrad.optim.optimizer import Optimizer
from scratchgrad.optim.rmsprop import RMSprop
from scratchgrad.optim.rprop import Rprop
from scratchgrad.optim.sgd import SGD
from scratchgrad.optim.sparse_adam import SparseAdam

__all__ = [
    "ASGD",
    "LBFGS",
    "SGD",
    "Adadelta",
    "Adafactor",
    "Adagrad",
    "Adam",
    "AdamW",
    "Adamax",
    "NAdam",
    "Optimizer",
    "RAdam",
    "RMSprop",
    "Rprop",
    "SparseAdam",
    "lr_scheduler",
]
