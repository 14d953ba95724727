"""The table of differentiable primitives. Each is a small ``Function``: forward on arrays,
backward on Tensors, side by side. Everything else on Tensor is composed from these.
"""
