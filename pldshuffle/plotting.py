"""Plots of certified privacy curves: δ(ε) and ε(δ) with the band between lower and upper bound.

matplotlib is an optional dependency (``pip install pldshuffle[plot]``); it is imported when a function
is called.  Each function draws on ``ax`` (or the current Axes) and returns it, so figures compose::

    import matplotlib
    matplotlib.use("Agg")
    import numpy as np
    import pldshuffle as ps
    from pldshuffle.plotting import plot_delta_curve

    acc = ps.FourierAccountant().compose(ps.ShuffledBinaryRR(1000, 1.0, dataset="khh21"), count=4)
    ax = plot_delta_curve(acc, np.linspace(0.05, 0.6, 30), label="2RR, n=1000, 4 rounds")
    ax.figure.savefig("delta_curve.png")

Baselines are drawn dashed.  Each is either ``(label, values)`` with values at the same x points, or a
callable ``x -> values`` (labelled by its ``__name__``), e.g. an analytic bound of
:mod:`pldshuffle.bounds` wrapped in a ``lambda``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, Union

import numpy as np
from numpy.typing import ArrayLike, NDArray

from .accountant import FourierAccountant

if TYPE_CHECKING:
    from matplotlib.axes import Axes

__all__ = ["plot_delta_curve", "plot_epsilon_curve"]

Baseline = Union[Callable[[NDArray[np.float64]], ArrayLike], tuple[str, ArrayLike]]


def _axes(ax: Axes | None) -> Axes:
    try:
        import matplotlib.pyplot as plt
    except ImportError as exc:
        raise ImportError(
            "pldshuffle.plotting needs matplotlib; install it with `pip install matplotlib` "
            "(or `pip install pldshuffle[plot]`)"
        ) from exc
    return plt.gca() if ax is None else ax


def _points(name: str, values: ArrayLike) -> NDArray[np.float64]:
    x = np.asarray(values, dtype=np.float64).ravel()
    if x.size == 0 or np.any(~np.isfinite(x)) or np.any(np.diff(x) <= 0):
        raise ValueError(f"{name} must be a non-empty, strictly increasing array of finite numbers, got {values!r}")
    return x


def _draw_baselines(ax: Axes, x: NDArray[np.float64], baselines: Sequence[Baseline]) -> None:
    for baseline in baselines:
        if callable(baseline):
            label, values = getattr(baseline, "__name__", "baseline"), baseline(x)
        else:
            label, values = baseline
        y = np.asarray(values, dtype=np.float64).ravel()
        if y.shape != x.shape:
            raise ValueError(f"baseline {label!r} has {y.size} values for {x.size} points")
        ax.plot(x, y, linestyle="--", label=label)


def _draw_band(
    ax: Axes, x: NDArray[np.float64], lower: ArrayLike, upper: ArrayLike, label: str | None, color: Any
) -> None:
    (line,) = ax.plot(x, upper, color=color, label=label)
    ax.fill_between(x, lower, upper, color=line.get_color(), alpha=0.3, linewidth=0)


def plot_delta_curve(
    accountant: FourierAccountant,
    epsilons: ArrayLike,
    *,
    ax: Axes | None = None,
    label: str | None = "pldshuffle (certified upper)",
    baselines: Sequence[Baseline] = (),
    color: Any = None,
) -> Axes:
    """Plot δ(ε) of the accountant's composition: certified upper line, band down to the lower bound.

    Parameters
    ----------
    accountant : FourierAccountant
        An accountant with mechanisms composed.
    epsilons : array_like
        Strictly increasing ε values (x axis).
    ax : matplotlib Axes, optional
        Where to draw (default: the current Axes).
    label : str or None
        Legend label of the upper line.
    baselines : sequence
        Analytic curves drawn dashed: ``(label, values)`` or callables ``epsilons -> deltas``.
    color : optional
        matplotlib colour of the line and band.

    Returns
    -------
    matplotlib.axes.Axes
        With a logarithmic δ axis.
    """
    ax = _axes(ax)
    x = _points("epsilons", epsilons)
    bounds = accountant.get_delta_bounds(x)
    _draw_band(ax, x, bounds.lower, bounds.upper, label, color)
    _draw_baselines(ax, x, baselines)
    ax.set_yscale("log")
    ax.set_xlabel("ε")
    ax.set_ylabel("δ(ε)")
    if label is not None or baselines:
        ax.legend()
    return ax


def plot_epsilon_curve(
    accountant: FourierAccountant,
    deltas: ArrayLike,
    *,
    ax: Axes | None = None,
    label: str | None = "pldshuffle (certified upper)",
    baselines: Sequence[Baseline] = (),
    color: Any = None,
) -> Axes:
    """Plot ε(δ) of the accountant's composition: certified upper line, band down to the lower bound.

    Parameters
    ----------
    accountant : FourierAccountant
        An accountant with mechanisms composed.
    deltas : array_like
        Strictly increasing δ values in (0, 1) (x axis, logarithmic).  One accountant query per point.
    ax, label, baselines, color
        As in :func:`plot_delta_curve`; callable baselines map ``deltas -> epsilons``.

    Returns
    -------
    matplotlib.axes.Axes
        With a logarithmic δ axis.
    """
    ax = _axes(ax)
    x = _points("deltas", deltas)
    lower, upper = accountant.epsilon_curve(x)  # one composition for all deltas
    _draw_band(ax, x, lower, upper, label, color)
    _draw_baselines(ax, x, baselines)
    ax.set_xscale("log")
    ax.set_xlabel("δ")
    ax.set_ylabel("ε(δ)")
    if label is not None or baselines:
        ax.legend()
    return ax
