"""Graph drawing: the generic walk, Value graphs and Tensor graphs, and rendering with `dot`."""

import doctest
import importlib
import math
import re
import shutil
import sys

import pytest

import scratchgrad.viz as viz
from scratchgrad.scalar import Value
from scratchgrad.viz import draw_dot, trace

graphviz = pytest.importorskip("graphviz")


def records(dot) -> list[str]:
    return re.findall(r'label="\{ (.*?) \}" .*shape=record', dot.source)


def test_trace_finds_every_node_once_and_every_edge():
    x, y = Value(1.0), Value(2.0)
    a = x * y
    out = a * a + x  # `a` used twice by one node, x by two nodes
    nodes, edges = trace(out, lambda v: v._prev)
    assert len(nodes) == 5 and len({id(n) for n in nodes}) == 5  # out, a*a, x, a, y
    assert nodes[0] is out
    assert sum(1 for p, c in edges if p is a) == 2
    assert sum(1 for p, c in edges if p is x) == 2
    assert len(edges) == 6


def test_trace_is_iterative():
    v = Value(0.0)
    for _ in range(100_000):
        v = v.tanh()
    nodes, edges = trace(v, lambda n: n._prev)
    assert len(nodes) == 100_001 and len(edges) == 100_000


def test_draw_dot_has_one_record_per_value_and_one_node_per_op():
    x, w, b = Value(2.0), Value(-3.0), Value(6.5)
    out = (x * w + b).tanh()
    out.backward()
    dot = draw_dot(out)
    labels = records(dot)
    assert len(labels) == 6  # x, w, b, x*w, +b, tanh
    dx = (1 - math.tanh(0.5) ** 2) * -3.0
    assert f"data 2.0000 | grad {dx:.4f}" in labels
    assert f"data {math.tanh(0.5):.4f} | grad 1.0000" in labels
    ops = re.findall(r"\[label=\"?([^\"\s]+)\"? shape=oval\]", dot.source)
    assert sorted(ops) == ["*", "+", "tanh"]
    assert dot.source.count("->") == 3 + 5  # op -> result, and input -> op
    assert "rankdir=LR" in dot.source
    assert "rankdir=TB" in draw_dot(out, rankdir="TB").source


def test_a_reused_value_is_drawn_once_with_two_edges():
    x = Value(3.0)
    dot = draw_dot(x * x)
    assert len(records(dot)) == 2
    assert dot.source.count(f"{id(x)} ->") == 2


def test_tensor_graph_has_one_record_per_op_and_leaf():
    sg = pytest.importorskip("scratchgrad")
    x = sg.tensor([1.0, 2.0], requires_grad=True)
    w = sg.ones(2, 3, dtype=sg.float64, requires_grad=True)
    out = (x.double() @ w).tanh().sum()
    labels = records(draw_dot(out))
    assert "leaf | (2,) | float32" in labels and "leaf | (2, 3) | float64" in labels
    assert "SumBackward0 | () | float64" in labels and "TanhBackward0 | (3,) | float64" in labels
    assert not any("None" in label for label in labels)
    constant = sg.ones(3)  # requires no grad: not part of the graph
    assert records(draw_dot((w * constant).sum())) == [
        "SumBackward0 | () | float64",
        "MulBackward0 | (2, 3) | float64",
        "leaf | (2, 3) | float64",
    ]


@pytest.mark.skipif(shutil.which("dot") is None, reason="Graphviz's dot program is not installed")
@pytest.mark.parametrize("fmt", ["svg", "png"])
def test_render_writes_the_file(tmp_path, fmt):
    out = Value(2.0) * Value(3.0) + 1
    out.backward()
    path = draw_dot(out, format=fmt).render(tmp_path / "graph", cleanup=True)
    data = (tmp_path / f"graph.{fmt}").read_bytes()
    assert path.endswith(f"graph.{fmt}")
    if fmt == "png":
        assert data.startswith(b"\x89PNG")
    else:
        assert b"<svg" in data and b"data 7.0000" in data and b"grad 1.0000" in data


def test_doc_examples_run():
    assert doctest.testmod(viz).failed == 0


def test_without_graphviz_the_import_error_names_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "graphviz", None)  # as if it were not installed
    monkeypatch.delitem(sys.modules, "scratchgrad.viz")
    with pytest.raises(ImportError, match=r"pip install 'scratchgrad\[viz\]'"):
        importlib.import_module("scratchgrad.viz")
