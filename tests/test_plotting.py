"""Plot helpers: they return Axes, draw the lower-upper band, baselines dashed, δ on a log scale."""

from __future__ import annotations

import numpy as np
import pytest

import pldshuffle as ps

matplotlib = pytest.importorskip("matplotlib")
matplotlib.use("Agg")

from matplotlib.axes import Axes  # noqa: E402
from matplotlib.collections import PolyCollection  # noqa: E402

from pldshuffle.plotting import plot_delta_curve, plot_epsilon_curve  # noqa: E402


@pytest.fixture(scope="module")
def accountant():
    return ps.FourierAccountant().compose(ps.ShuffledBinaryRR(1000, 1.0, dataset="khh21"), count=2)


def _bands(ax):
    return [c for c in ax.collections if isinstance(c, PolyCollection)]


def test_delta_curve(accountant):
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots()
    eps = np.linspace(0.05, 0.4, 12)
    out = plot_delta_curve(accountant, eps, ax=ax, baselines=[("ε0 bound", np.full(12, 1e-3)), lambda x: 1e-2 * np.exp(-x)])
    assert out is ax and isinstance(out, Axes)
    assert len(_bands(ax)) == 1 and ax.get_yscale() == "log"
    upper, *baselines = ax.get_lines()
    np.testing.assert_allclose(upper.get_ydata(), accountant.get_delta_bounds(eps).upper)
    assert [b.get_linestyle() for b in baselines] == ["--", "--"]
    assert [b.get_label() for b in baselines] == ["ε0 bound", "<lambda>"]
    plt.close(fig)


def test_epsilon_curve(accountant):
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots()
    deltas = np.array([1e-8, 1e-6, 1e-4])
    out = plot_epsilon_curve(accountant, deltas, ax=ax, label="2RR")
    assert out is ax and len(_bands(ax)) == 1 and ax.get_xscale() == "log"
    (line,) = ax.get_lines()
    assert line.get_label() == "2RR"
    assert np.all(np.diff(line.get_ydata()) < 0)  # ε decreases with δ
    plt.close(fig)


def test_bad_points(accountant):
    with pytest.raises(ValueError, match="epsilons"):
        plot_delta_curve(accountant, [0.3, 0.1])
    with pytest.raises(ValueError, match="baseline"):
        plot_delta_curve(accountant, [0.1, 0.3], baselines=[("short", [1.0])])
