"""L-BFGS: a quasi-Newton method that builds its curvature model from the last few steps.

Nocedal and Wright, Numerical Optimization (2006), algorithms 7.4 (the two-loop recursion) and
3.5-3.6 (the strong Wolfe line search); PyTorch's version follows Schmidt's minFunc, and this
one follows PyTorch's step by step, so both take the same steps from the same closure.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from scratchgrad.autograd import capture_hook
from scratchgrad.autograd.graph import increment_version
from scratchgrad.backend import namespace
from scratchgrad.creation import from_numpy
from scratchgrad.optim.optimizer import Optimizer, ParamsT, check_non_negative, real_pairs
from scratchgrad.tensor import Tensor

# The objective along the search direction: (step size) -> (loss, flat gradient).
LineFunction = Callable[[float], tuple[float, Any]]


class LBFGS(Optimizer):
    """L-BFGS, as ``torch.optim.LBFGS`` (same defaults, same algorithm).

    ``step(closure)`` runs up to ``max_iter`` iterations, calling ``closure`` (which must zero
    the gradients, recompute the loss, call ``backward()`` and return the loss) up to
    ``max_eval`` times, and returns the first loss. The search direction comes from the last
    ``history_size`` steps and gradient changes; the step length is ``lr`` or, with
    ``line_search_fn="strong_wolfe"``, the result of a line search satisfying the strong Wolfe
    conditions. Only one parameter group is allowed; every parameter is updated as one flat
    vector.

    >>> import scratchgrad as sg
    >>> w = sg.tensor([1.5, -0.5], requires_grad=True)
    >>> opt = sg.optim.LBFGS([w], line_search_fn="strong_wolfe")
    >>> def closure():
    ...     opt.zero_grad()
    ...     loss = ((w - sg.tensor([3.0, 1.0])) ** 2).sum()  # minimum at (3, 1)
    ...     loss.backward()
    ...     return loss
    >>> loss = opt.step(closure)
    >>> [round(v, 4) for v in w.tolist()]
    [3.0, 1.0]
    """

    def __init__(
        self,
        params: ParamsT,
        lr: float = 1,
        max_iter: int = 20,
        max_eval: int | None = None,
        tolerance_grad: float = 1e-7,
        tolerance_change: float = 1e-9,
        history_size: int = 100,
        line_search_fn: str | None = None,
    ) -> None:
        check_non_negative(lr=lr)
        if line_search_fn not in (None, "strong_wolfe"):
            raise ValueError(
                f"LBFGS: line_search_fn must be None or 'strong_wolfe', got {line_search_fn!r}"
            )
        defaults = {
            "lr": lr,
            "max_iter": max_iter,
            "max_eval": max_iter * 5 // 4 if max_eval is None else max_eval,
            "tolerance_grad": tolerance_grad,
            "tolerance_change": tolerance_change,
            "history_size": history_size,
            "line_search_fn": line_search_fn,
        }
        super().__init__(params, defaults)
        if len(self.param_groups) != 1:
            raise ValueError("LBFGS doesn't support per-parameter options (parameter groups)")
        self._params = self.param_groups[0]["params"]

    # ---- the parameters as one flat vector -----------------------------------------------------

    def _flat_grad(self) -> Any:
        xp = namespace(self._params[0].array)
        return xp.concatenate(  # (a sparse gradient densified, as PyTorch's)
            [
                xp.zeros_like(real_pairs(p.array)).reshape(-1)
                if p.grad is None
                else real_pairs(p.grad.to_dense().array).reshape(-1)
                for p in self._params
            ]
        )

    def _add_to_params(self, step_size: float, direction: Any) -> None:
        offset = 0
        for p in self._params:
            param = real_pairs(p.array)  # (a complex parameter: its parts, as PyTorch's)
            param += step_size * direction[offset : offset + param.size].reshape(param.shape)
            increment_version(p)
            offset += param.size

    def _set_params(self, arrays: list[Any]) -> None:
        for p, array in zip(self._params, arrays):
            p.array[...] = array
            increment_version(p)

    def _directional_evaluate(self, closure, start: list[Any], t: float, d: Any):
        """The loss and flat gradient at ``start + t * d``; the parameters are put back."""
        self._add_to_params(t, d)
        loss = float(self._evaluate(closure))
        flat_grad = self._flat_grad()
        self._set_params(start)
        return loss, flat_grad

    # ---- the step -------------------------------------------------------------------------------

    def step(self, closure: Callable[[], Any]) -> Any:  # type: ignore[override]
        """Run up to ``max_iter`` iterations; return the loss before the first one."""
        if closure is None:
            raise RuntimeError("LBFGS.step requires a closure that recomputes the loss")
        if capture_hook.recorder is not None:
            capture_hook.recorder.refuse("LBFGS.step (its closure re-runs the step)")
        if not any(p.numel() for p in self._params):  # PyTorch's max() of the empty gradient
            raise RuntimeError("LBFGS.step: the parameters have no entries (0 elements in all)")
        group = self.param_groups[0]
        lr, max_iter, max_eval = group["lr"], group["max_iter"], group["max_eval"]
        tolerance_grad, tolerance_change = group["tolerance_grad"], group["tolerance_change"]
        history_size = group["history_size"]

        state = self.state[self._params[0]]
        state.setdefault("func_evals", 0)
        state.setdefault("n_iter", 0)

        orig_loss = self._evaluate(closure)
        loss = float(orig_loss)
        current_evals = 1
        state["func_evals"] += 1
        flat_grad = self._flat_grad()
        xp = namespace(flat_grad)
        if xp.abs(flat_grad).max() <= tolerance_grad:  # already optimal
            return orig_loss

        # The curvature memory from the previous step(), if any.
        # (``t``, ``ro`` and ``H_diag`` are floats in the state, 0-d tensors in PyTorch's; in
        # the step they are NumPy scalars of the parameters' dtype, as PyTorch computes them:
        # float32 parameters' L-BFGS would drift apart from PyTorch's in float64)
        d, t = _array(state.get("d")), _number(state.get("t"))
        old_dirs = [_array(y) for y in state.get("old_dirs", [])]
        old_stps = [_array(s) for s in state.get("old_stps", [])]
        ro, H_diag = [float(r) for r in state.get("ro", [])], _number(state.get("H_diag"))
        prev_flat_grad, prev_loss = _array(state.get("prev_flat_grad")), state.get("prev_loss")

        n_iter = 0
        while n_iter < max_iter:
            n_iter += 1
            state["n_iter"] += 1
            if state["n_iter"] == 1:  # the first direction is steepest descent
                d = -flat_grad
                old_dirs, old_stps, ro, H_diag = [], [], [], 1.0
            else:
                y = flat_grad - prev_flat_grad
                s = d * t
                ys = y @ s
                if ys > 1e-10:  # keep the pair only where the curvature is positive
                    if len(old_dirs) == history_size:
                        old_dirs.pop(0)
                        old_stps.pop(0)
                        ro.pop(0)
                    old_dirs.append(y)
                    old_stps.append(s)
                    ro.append(1.0 / ys)
                    H_diag = ys / (y @ y)
                d = _two_loop_direction(flat_grad, old_dirs, old_stps, ro, H_diag)

            prev_flat_grad = flat_grad.copy()
            prev_loss = loss
            t = lr
            if state["n_iter"] == 1:  # scaled down so that the first step cannot be too long
                t *= min(1.0, 1.0 / xp.abs(flat_grad).sum())
            gtd = flat_grad @ d  # the directional derivative
            if gtd > -tolerance_change:  # not a descent direction any more
                break

            if group["line_search_fn"] is not None:
                start = [p.array.copy() for p in self._params]

                def along(step: float, start=start, d=d) -> tuple[float, Any]:
                    return self._directional_evaluate(closure, start, step, d)

                loss, flat_grad, t, ls_func_evals = _strong_wolfe(
                    along, t, d, loss, flat_grad, gtd, max_ls=max_eval - current_evals
                )
                self._add_to_params(t, d)
                opt_cond = xp.abs(flat_grad).max() <= tolerance_grad
            else:
                self._add_to_params(t, d)
                ls_func_evals = 0
                opt_cond = False
                if n_iter != max_iter:  # re-evaluate unless this was the last iteration
                    loss = float(self._evaluate(closure))
                    flat_grad = self._flat_grad()
                    opt_cond = xp.abs(flat_grad).max() <= tolerance_grad
                    ls_func_evals = 1
            current_evals += ls_func_evals
            state["func_evals"] += ls_func_evals

            if (
                n_iter == max_iter
                or current_evals >= max_eval
                or opt_cond
                or xp.abs(d * t).max() <= tolerance_change
                or abs(loss - prev_loss) < tolerance_change
            ):
                break

        state.update(
            d=_tensor(d),
            t=float(t),
            old_dirs=[_tensor(y) for y in old_dirs],
            old_stps=[_tensor(s) for s in old_stps],
            ro=[float(r) for r in ro],
            H_diag=float(H_diag),
            prev_flat_grad=_tensor(prev_flat_grad),
            prev_loss=prev_loss,
        )
        return orig_loss


def _array(value: Tensor | None) -> Any:
    return None if value is None else value.array


def _number(value: Tensor | float | None) -> float | None:
    return None if value is None else float(value)


def _tensor(array: Any) -> Tensor | None:
    return None if array is None else from_numpy(array)


def _two_loop_direction(grad, old_dirs, old_stps, ro, H_diag) -> Any:
    """The L-BFGS direction -H g by the two-loop recursion (Nocedal and Wright, alg. 7.4)."""
    q = -grad
    alphas = [0.0] * len(old_dirs)
    for i in reversed(range(len(old_dirs))):
        alphas[i] = (old_stps[i] @ q) * ro[i]
        q -= alphas[i] * old_dirs[i]
    r = q * H_diag
    for i in range(len(old_dirs)):
        beta = (old_dirs[i] @ r) * ro[i]
        r += (alphas[i] - beta) * old_stps[i]
    return r


def _cubic_interpolate(x1, f1, g1, x2, f2, g2, bounds=None) -> float:
    """The minimiser of the cubic through (x1, f1, g1) and (x2, f2, g2), clipped to the
    bounds (by default the interval between the points); their midpoint if there is none."""
    xmin_bound, xmax_bound = bounds if bounds is not None else sorted((x1, x2))
    d1 = g1 + g2 - 3 * (f1 - f2) / (x1 - x2)
    d2_square = d1**2 - g1 * g2
    if d2_square < 0:
        return (xmin_bound + xmax_bound) / 2.0
    d2 = d2_square**0.5
    if x1 <= x2:
        min_pos = x2 - (x2 - x1) * ((g2 + d2 - d1) / (g2 - g1 + 2 * d2))
    else:
        min_pos = x1 - (x1 - x2) * ((g1 + d2 - d1) / (g1 - g2 + 2 * d2))
    return min(max(min_pos, xmin_bound), xmax_bound)


def _strong_wolfe(
    along: LineFunction,
    t: float,
    d: Any,
    f: float,
    g: Any,
    gtd: float,
    c1: float = 1e-4,
    c2: float = 0.9,
    tolerance_change: float = 1e-9,
    max_ls: int = 25,
) -> tuple[float, Any, float, int]:
    """A step length satisfying the strong Wolfe conditions along ``d`` (Nocedal and Wright,
    alg. 3.5 and 3.6): first bracket an acceptable step, then zoom into the bracket by cubic
    interpolation. Returns the loss, flat gradient and step found, and the evaluations used."""
    d_norm = abs(d).max()
    f_new, g_new = along(t)
    ls_func_evals = 1
    gtd_new = g_new @ d

    # Bracketing: grow the step until it is acceptable or an interval holds a good one.
    t_prev, f_prev, g_prev, gtd_prev = 0.0, f, g, gtd
    done = False
    ls_iter = 0
    while ls_iter < max_ls:
        if f_new > (f + c1 * t * gtd) or (ls_iter > 1 and f_new >= f_prev):
            bracket, bracket_f = [t_prev, t], [f_prev, f_new]
            bracket_g, bracket_gtd = [g_prev, g_new], [gtd_prev, gtd_new]
            break
        if abs(gtd_new) <= -c2 * gtd:
            bracket, bracket_f, bracket_g = [t], [f_new], [g_new]
            done = True
            break
        if gtd_new >= 0:
            bracket, bracket_f = [t_prev, t], [f_prev, f_new]
            bracket_g, bracket_gtd = [g_prev, g_new], [gtd_prev, gtd_new]
            break
        # Extrapolate: a step between 1.01 and 10 times longer.
        min_step, max_step = t + 0.01 * (t - t_prev), t * 10
        t_prev, t = (
            t,
            _cubic_interpolate(
                t_prev, f_prev, gtd_prev, t, f_new, gtd_new, bounds=(min_step, max_step)
            ),
        )
        f_prev, g_prev, gtd_prev = f_new, g_new, gtd_new
        f_new, g_new = along(t)
        ls_func_evals += 1
        gtd_new = g_new @ d
        ls_iter += 1
    if ls_iter == max_ls:  # out of evaluations: bracket between the start and the last step
        bracket, bracket_f, bracket_g = [0.0, t], [f, f_new], [g, g_new]

    # Zoom: shrink the bracket until a step satisfies both conditions.
    insuf_progress = False
    low_pos, high_pos = (0, 1) if bracket_f[0] <= bracket_f[-1] else (1, 0)
    while not done and ls_iter < max_ls:
        if abs(bracket[1] - bracket[0]) * d_norm < tolerance_change:
            break
        t = _cubic_interpolate(
            bracket[0], bracket_f[0], bracket_gtd[0], bracket[1], bracket_f[1], bracket_gtd[1]
        )
        # Keep away from the ends of the bracket, unless the last try made progress there.
        eps = 0.1 * (max(bracket) - min(bracket))
        if min(max(bracket) - t, t - min(bracket)) < eps:
            if insuf_progress or t >= max(bracket) or t <= min(bracket):
                if abs(t - max(bracket)) < abs(t - min(bracket)):
                    t = max(bracket) - eps
                else:
                    t = min(bracket) + eps
                insuf_progress = False
            else:
                insuf_progress = True
        else:
            insuf_progress = False
        f_new, g_new = along(t)
        ls_func_evals += 1
        gtd_new = g_new @ d
        ls_iter += 1

        if f_new > (f + c1 * t * gtd) or f_new >= bracket_f[low_pos]:
            # Not enough decrease: the new point becomes the high end.
            bracket[high_pos], bracket_f[high_pos] = t, f_new
            bracket_g[high_pos], bracket_gtd[high_pos] = g_new, gtd_new
            low_pos, high_pos = (0, 1) if bracket_f[0] <= bracket_f[1] else (1, 0)
        else:
            if abs(gtd_new) <= -c2 * gtd:
                done = True
            elif gtd_new * (bracket[high_pos] - bracket[low_pos]) >= 0:
                # The old high end is on the wrong side: the old low end replaces it.
                bracket[high_pos], bracket_f[high_pos] = bracket[low_pos], bracket_f[low_pos]
                bracket_g[high_pos] = bracket_g[low_pos]
                bracket_gtd[high_pos] = bracket_gtd[low_pos]
            bracket[low_pos], bracket_f[low_pos] = t, f_new
            bracket_g[low_pos], bracket_gtd[low_pos] = g_new, gtd_new

    return bracket_f[low_pos], bracket_g[low_pos], bracket[low_pos], ls_func_evals
