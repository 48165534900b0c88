"""The FFT backends' batched inverse transforms and the ``"auto"`` choice (the rounding they share is
bounded by the accountant's error terms, tested end to end in test_accountant and test_adaptive)."""

import numpy as np
import pytest

from pldshuffle import fft


@pytest.mark.parametrize("name", fft.available_backends())
@pytest.mark.parametrize("rows", [1, fft._BATCH_ROWS, 2 * fft._BATCH_ROWS + 3])
def test_inverse_products_match_one_at_a_time(name, rows):
    size = 3000
    rng = np.random.default_rng(rows)
    backend = fft.FFTBackend(name)
    spectrum = backend.rfft(rng.standard_normal(size))
    kernels = np.stack([backend.rfft(rng.standard_normal(size)) for _ in range(rows)])
    seen = []
    for index, out in backend.inverse_products(spectrum, kernels, size):
        seen.append(index)
        exact = np.fft.irfft(spectrum * kernels[index], n=size)  # numpy's one at a time
        assert out.shape == (size,)
        assert np.max(np.abs(out - exact)) <= 1e-12 * np.max(np.abs(exact))
    assert seen == list(range(rows))


def test_auto_sends_many_small_transforms_to_the_fast_library():
    small = fft.AUTO_SMALL // 4
    assert fft.get_backend("auto", small).name == "numpy"
    assert fft.get_backend("auto", small, transforms=fft.AUTO_WORK // small - 1).name == "numpy"
    fast = fft.get_backend("auto", small, transforms=fft.AUTO_WORK // small).name
    assert fast == ("pyfftw" if "pyfftw" in fft.available_backends() else "scipy")
