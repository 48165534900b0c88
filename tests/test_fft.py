"""The FFT backends' batched inverse transforms and the ``"auto"`` choice (the rounding they share is
bounded by the accountant's error terms, tested end to end in test_accountant and test_adaptive)."""

import os

import numpy as np
import pytest

from pldshuffle.pld import fft


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


@pytest.mark.parametrize("name", fft.available_backends())
def test_a_range_of_rows_transforms_those_rows_only(name):
    size, rows = 2000, 2 * fft._BATCH_ROWS + 5
    rng = np.random.default_rng(7)
    backend = fft.FFTBackend(name)
    spectrum = backend.rfft(rng.standard_normal(size))
    kernels = np.stack([backend.rfft(rng.standard_normal(size)) for _ in range(rows)])
    part = range(3, rows - 2)
    seen = [(index, out.copy()) for index, out in backend.inverse_products(spectrum, kernels, size, part)]
    assert [index for index, _ in seen] == list(part)
    for index, out in seen:
        exact = np.fft.irfft(spectrum * kernels[index], n=size)
        assert np.max(np.abs(out - exact)) <= 1e-12 * np.max(np.abs(exact))


@pytest.mark.parametrize("workers, rows, size, parts", [(1, 40, 2**14, 1), (3, 40, 2**14, 3), (3, 2, 2**17, 2), (3, 40, 64, 1)])
def test_rows_are_split_into_ordered_parts_run_side_by_side(workers, rows, size, parts, monkeypatch):
    """Parts are contiguous, in order, of equal sizes (±1) and one per worker; small work stays on the caller."""
    import threading

    monkeypatch.setattr(fft, "WORKERS", workers)
    threads = set()

    def work(part):
        threads.add(threading.get_ident())
        return part

    got = fft.map_row_ranges(rows, work, size)
    assert len(got) == parts
    assert [i for part in got for i in part] == list(range(rows))
    assert max(map(len, got)) - min(map(len, got)) <= 1
    assert (threading.get_ident() in threads) == (parts == 1)


def test_rows_mapped_inside_a_part_run_inline(monkeypatch):
    """A part that maps rows again does not wait on the pool it runs in (which could deadlock)."""
    monkeypatch.setattr(fft, "WORKERS", 2)
    nested = fft.map_row_ranges(4, lambda part: fft.map_row_ranges(6, lambda inner: list(inner), 2**20), 2**20)
    assert nested == [[list(range(6))], [list(range(6))]]


def test_norms_and_the_forward_error_need_no_blas():
    """The 2-norm (einsum, not BLAS's multithreaded ddot) and Higham's forward bound log2(m)·8u·√m·‖x‖₂."""
    x = np.arange(1.0, 6.0)
    assert fft.norm2(x) == pytest.approx(np.sqrt(55.0), rel=1e-15)
    assert fft.forward_error(fft.norm2(x), 8) == pytest.approx(3 * 8 * 2.0**-53 * np.sqrt(8) * np.sqrt(55.0) * 1.01, rel=1e-14)


@pytest.mark.parametrize("name", fft.available_backends())
def test_threads_transforming_at_once_each_get_their_own_results(name):
    """FFTW plans own their buffers: callers on several threads (and the row workers) each run their own."""
    from concurrent.futures import ThreadPoolExecutor

    backend, size = fft.FFTBackend(name), 4096

    def transforms(seed):
        rng = np.random.default_rng(seed)
        worst = 0.0
        for _ in range(100):
            x = rng.standard_normal(size)
            spectrum = backend.rfft(x)
            worst = max(worst, float(np.max(np.abs(spectrum - np.fft.rfft(x)))), float(np.max(np.abs(backend.irfft(spectrum, size) - x))))
            for index, out in backend.inverse_products(spectrum, np.stack([spectrum, 2 * spectrum]), size):
                exact = np.fft.irfft(spectrum * spectrum * (index + 1), n=size)
                worst = max(worst, float(np.max(np.abs(out - exact)) / np.max(np.abs(exact))))
        return worst

    with ThreadPoolExecutor(4) as pool:
        assert max(pool.map(transforms, range(8))) <= 1e-9


@pytest.mark.skipif(not hasattr(os, "fork"), reason="no fork on this platform")
def test_a_forked_child_starts_its_own_pool(monkeypatch):
    """A child forked after the parent used the row workers gets none of its threads or locks: it starts a
    fresh pool (an inherited one may never run what is submitted) and maps rows with it."""
    import multiprocessing

    monkeypatch.setattr(fft, "PARALLEL_POINTS", 0)
    monkeypatch.setattr(fft, "WORKERS", 2)
    fft.map_row_ranges(4, list, 1024)
    assert fft._pool is not None
    ctx = multiprocessing.get_context("fork")
    queue = ctx.Queue()

    def child():
        queue.put((fft._pool is None, fft.map_row_ranges(4, list, 1024)))

    process = ctx.Process(target=child)
    process.start()
    fresh, parts = queue.get(timeout=60)
    process.join(60)
    assert fresh and parts == [[0, 1], [2, 3]] and process.exitcode == 0
