"""The scalar engine: reverse-mode automatic differentiation, one Python float at a time.

Every `Value` remembers the values it was computed from (`_prev`), the operation that made it
(`_op`), and how to pass a gradient back to those inputs (`_backward`). `backward()` orders the
graph so that each node comes after everything that uses it, then applies the chain rule from the
output back to the inputs. That is all of backpropagation; `Neuron`, `Layer` and `MLP` at the end
build a small neural network out of it.

>>> a, b = Value(2.0), Value(-3.0)
>>> c = a * b + a**2      # c = -2
>>> c.backward()          # dc/da = b + 2a = 1, dc/db = a = 2
>>> a, b
(Value(data=2.0000, grad=1.0000), Value(data=-3.0000, grad=2.0000))

This module imports only the standard library: it is meant to be read top to bottom.
"""

from __future__ import annotations

import math
import random
from collections.abc import Iterable

Number = int | float


class Value:
    """A scalar that records how it was computed, so gradients can flow back through it.

    `data` is the number; `grad` is d(output)/d(this value) once `output.backward()` has run.

    >>> x = Value(3.0)
    >>> y = x * x         # `_prev` is a tuple, so both uses of x are edges
    >>> y.backward()
    >>> x.grad
    6.0
    """

    __slots__ = ("data", "grad", "_prev", "_op", "_backward")

    def __init__(self, data: Number, _prev: tuple = (), _op: str = "", _backward=None) -> None:
        self.data = float(data)
        self.grad = 0.0
        self._prev = _prev  # the inputs this value was computed from (empty for a leaf)
        self._op = _op  # the operation's name, for printing and drawing
        self._backward = _backward  # adds d(out)/d(input) * out.grad into each input's grad

    # Each operation computes `out` from its inputs and names a backward function, written just
    # below it, that passes `out.grad` back: the local derivative times `out.grad`, added (+=)
    # because an input used twice receives a gradient from each use. The backward function gets
    # `out` as its argument rather than closing over it (as micrograd's closures do), so no node
    # refers to itself and a graph is freed by reference counting as soon as it is unused.
    # A plain number operand becomes a leaf Value: a constant that nobody reads the gradient of.

    def __add__(self, other: Value | Number) -> Value:
        other = other if isinstance(other, Value) else Value(other)
        return Value(self.data + other.data, (self, other), "+", Value._add_backward)

    @staticmethod
    def _add_backward(out: Value) -> None:
        x, y = out._prev
        x.grad += out.grad
        y.grad += out.grad

    def __mul__(self, other: Value | Number) -> Value:
        other = other if isinstance(other, Value) else Value(other)
        return Value(self.data * other.data, (self, other), "*", Value._mul_backward)

    @staticmethod
    def _mul_backward(out: Value) -> None:
        x, y = out._prev
        x.grad += y.data * out.grad
        y.grad += x.data * out.grad

    def __pow__(self, other: Value | Number) -> Value:
        other = other if isinstance(other, Value) else Value(other)
        return Value(_pow(self.data, other.data), (self, other), "**", Value._pow_backward)

    @staticmethod
    def _pow_backward(out: Value) -> None:
        x, k = out._prev
        x.grad += k.data * x.data ** (k.data - 1) * out.grad
        # d(x**k)/dk = x**k * log(x) is real only for x > 0; like PyTorch, use 0 at x == 0.
        dk = out.data * math.log(x.data) if x.data > 0 else 0.0 if x.data == 0 else math.nan
        k.grad += dk * out.grad

    def relu(self) -> Value:
        """max(0, x); its gradient at 0 is 0, as in PyTorch."""
        return Value(self.data if self.data > 0 else 0.0, (self,), "relu", Value._relu_backward)

    @staticmethod
    def _relu_backward(out: Value) -> None:
        (x,) = out._prev
        x.grad += (out.data > 0) * out.grad

    def tanh(self) -> Value:
        """Hyperbolic tangent. `math.tanh` saturates to +-1, where the textbook formula
        (e**2x - 1) / (e**2x + 1) overflows for x beyond about 355."""
        return Value(math.tanh(self.data), (self,), "tanh", Value._tanh_backward)

    @staticmethod
    def _tanh_backward(out: Value) -> None:
        (x,) = out._prev
        x.grad += (1.0 - out.data * out.data) * out.grad

    def exp(self) -> Value:
        """e**x; like `math.exp`, raises OverflowError for x above about 709.78."""
        return Value(math.exp(self.data), (self,), "exp", Value._exp_backward)

    @staticmethod
    def _exp_backward(out: Value) -> None:
        (x,) = out._prev
        x.grad += out.data * out.grad

    def log(self) -> Value:
        """Natural logarithm; raises ValueError naming the op and x for x <= 0."""
        if self.data <= 0:
            raise ValueError(f"log: input must be positive, got {self.data!r}")
        return Value(math.log(self.data), (self,), "log", Value._log_backward)

    @staticmethod
    def _log_backward(out: Value) -> None:
        (x,) = out._prev
        x.grad += out.grad / x.data

    def sigmoid(self) -> Value:
        """1 / (1 + e**-x), computed so that neither tail overflows: e**-x only for x >= 0,
        and e**x / (1 + e**x) for x < 0."""
        if self.data >= 0:
            data = 1.0 / (1.0 + math.exp(-self.data))
        else:
            e = math.exp(self.data)
            data = e / (1.0 + e)
        return Value(data, (self,), "sigmoid", Value._sigmoid_backward)

    @staticmethod
    def _sigmoid_backward(out: Value) -> None:
        (x,) = out._prev
        x.grad += out.data * (1.0 - out.data) * out.grad

    # Derived operations build a small expression from the ones above; no new derivatives.

    def __neg__(self) -> Value:  # -self
        return self * -1

    def __radd__(self, other: Number) -> Value:  # other + self
        return self + other

    def __sub__(self, other: Value | Number) -> Value:  # self - other
        return self + (-other)

    def __rsub__(self, other: Number) -> Value:  # other - self
        return other + (-self)

    def __rmul__(self, other: Number) -> Value:  # other * self
        return self * other

    def __truediv__(self, other: Value | Number) -> Value:  # self / other
        _check_divisor(other)
        return self * other**-1

    def __rtruediv__(self, other: Number) -> Value:  # other / self
        _check_divisor(self)
        return other * self**-1

    def __rpow__(self, other: Number) -> Value:  # other ** self
        return Value(other) ** self

    def backward(self) -> None:
        """Compute d(self)/d(node) for every node this value depends on.

        Gradients of leaves (values not computed from others, such as parameters) accumulate
        across calls, as in PyTorch: call `zero_grad()` (or set `.grad = 0.0`) between steps.
        Interior nodes are reset on each call and hold the gradient from the latest one.
        """
        # Topological order by an iterative depth-first search (no recursion, so a chain of a
        # million operations works). A node is popped once to push its inputs above it, and once
        # more when they are all in `order`. Leaves are skipped: they have nothing to pass on.
        order: list[Value] = []
        visited: set[Value] = set()
        done: set[Value] = set()
        stack = [self]
        while stack:
            node = stack.pop()
            if node not in visited:
                if node._backward is None:
                    continue
                visited.add(node)
                node.grad = 0.0
                stack.append(node)
                stack.extend(node._prev)
            elif node not in done:  # not a second copy pushed by another user of this node
                done.add(node)
                order.append(node)
        self.grad += 1.0  # d(self)/d(self); for an interior node it was just reset to 0
        for node in reversed(order):
            node._backward(node)

    def __repr__(self) -> str:
        return f"Value(data={self.data:.4f}, grad={self.grad:.4f})"


def _check_divisor(divisor: Value | Number) -> None:
    """Division is built as a product with divisor**-1: say "division by zero", not "pow"."""
    if (divisor.data if isinstance(divisor, Value) else divisor) == 0:
        raise ZeroDivisionError("Value division by zero (x / 0)")


def _pow(x: float, k: float) -> float:
    """x ** k as a real number, or a ValueError naming the op (Python's ** would return a
    complex number for a negative x and a fractional k)."""
    if x == 0 and k < 0:
        raise ZeroDivisionError(f"pow: {x!r} ** {k!r} divides by zero")
    try:
        return math.pow(x, k)
    except ValueError:
        raise ValueError(f"pow: {x!r} ** {k!r} has no real value") from None


# A small neural network library on top of Value.

_rng = random.Random()


def manual_seed(seed: int) -> None:
    """Seed the generator that initialises weights when no `rng` is given.

    >>> manual_seed(0); a = MLP(2, [3, 1]); manual_seed(0); b = MLP(2, [3, 1])
    >>> [p.data for p in a.parameters()] == [p.data for p in b.parameters()]
    True
    """
    _rng.seed(seed)


class Module:
    """Something with parameters: the base of Neuron, Layer and MLP."""

    def parameters(self) -> list[Value]:
        """Every trainable Value, in a fixed order."""
        return []

    def zero_grad(self) -> None:
        """Reset the gradients of all parameters (they accumulate over backward() calls)."""
        for p in self.parameters():
            p.grad = 0.0


ACTIVATIONS = ("tanh", "relu", "sigmoid", "linear")


class Neuron(Module):
    """activation(w . x + b), with w uniform in [-1, 1] and b = 0.

    >>> n = Neuron(2, activation="linear", rng=random.Random(0))
    >>> n([1.0, 2.0]).data == n.w[0].data + 2 * n.w[1].data
    True
    """

    def __init__(self, nin: int, activation: str = "tanh", rng: random.Random | None = None):
        if activation not in ACTIVATIONS:
            raise ValueError(f"Neuron: activation must be one of {ACTIVATIONS}, got {activation!r}")
        rng = rng or _rng
        self.w = [Value(rng.uniform(-1, 1)) for _ in range(nin)]
        self.b = Value(0.0)
        self.activation = activation

    def __call__(self, x: Iterable[Value | Number]) -> Value:
        x = x if isinstance(x, (list, tuple)) else list(x)
        if len(x) != len(self.w):  # zip would silently drop the extra weights or inputs
            raise ValueError(f"{self!r} takes {len(self.w)} inputs, got {len(x)}")
        act = sum((wi * xi for wi, xi in zip(self.w, x)), self.b)
        return act if self.activation == "linear" else getattr(act, self.activation)()

    def parameters(self) -> list[Value]:
        return self.w + [self.b]

    def __repr__(self) -> str:
        return f"Neuron({len(self.w)}, activation={self.activation!r})"


class Layer(Module):
    """`nout` neurons, each seeing all `nin` inputs."""

    def __init__(
        self, nin: int, nout: int, activation: str = "tanh", rng: random.Random | None = None
    ):
        self.neurons = [Neuron(nin, activation, rng) for _ in range(nout)]

    def __call__(self, x: Iterable[Value | Number]) -> list[Value]:
        x = list(x)
        return [n(x) for n in self.neurons]

    def parameters(self) -> list[Value]:
        return [p for n in self.neurons for p in n.parameters()]

    def __repr__(self) -> str:
        return f"Layer({len(self.neurons[0].w)}, {len(self.neurons)})"


class MLP(Module):
    """A multilayer perceptron: layers of sizes `nouts` after `nin` inputs.

    Every layer applies `activation` (tanh by default, as in the articles), unless
    `linear_output` is set, which leaves the last layer linear. A single output is returned as
    a Value, several as a list.

    >>> model = MLP(2, [8, 8, 1], rng=random.Random(0))
    >>> len(model.parameters())   # (2*8 + 8) + (8*8 + 8) + (8*1 + 1)
    105
    >>> -1 < model([0.5, -0.5]).data < 1   # tanh's range
    True
    """

    def __init__(
        self,
        nin: int,
        nouts: list[int],
        activation: str = "tanh",
        linear_output: bool = False,
        rng: random.Random | None = None,
    ) -> None:
        sizes = [nin, *nouts]
        acts = [activation] * len(nouts)
        if linear_output:
            acts[-1] = "linear"
        self.layers = [Layer(sizes[i], sizes[i + 1], acts[i], rng) for i in range(len(nouts))]

    def __call__(self, x: Iterable[Value | Number]) -> Value | list[Value]:
        for layer in self.layers:
            x = layer(x)
        return x[0] if len(x) == 1 else x

    def parameters(self) -> list[Value]:
        return [p for layer in self.layers for p in layer.parameters()]

    def __repr__(self) -> str:
        return f"MLP({', '.join(map(repr, self.layers))})"
