"""Shared benchmark machinery: timing, peak memory, machine info, the JSON row schema and the writers.

Row schema (one JSON object per measured number; every key is always present)::

    case            str    section of the suite, e.g. "krr_strong_side_by_side"
    system          str    "pldshuffle" | "dp-accounting"
    parameters      dict   everything that identifies the measurement (n, rounds, δ, dx, ...)
    value           float  the reported ε (pldshuffle: certified upper; dp-accounting: pessimistic estimate)
    lower, upper    float  pldshuffle: certified bracket; dp-accounting: optimistic / pessimistic
                           estimates (NOT certified: no error bar is returned by dp-accounting)
    relative_gap    float  (upper - lower) / upper
    seconds         float  median wall time of the repeats (pldshuffle: mechanism + compose + query;
                           dp-accounting: build of the pessimistic PLD + compose + query)
    peak_memory_mb  float  peak traced Python/NumPy allocation (tracemalloc) of one separate run, or None
    backend         str    FFT backend actually used (pldshuffle) / "numpy-fft" (dp-accounting)
    notes           str    free text (caveats, errors, why skipped)
    status          str    "ok" | "skipped" | "error"
    extra           dict   breakdowns: repeats, per-repeat times, CPU time, build vs compose, diagnostics

``None`` stands for "not measured"; non-finite floats are written as the strings "inf"/"nan".
"""

from __future__ import annotations

import contextlib
import datetime as _dt
import gc
import importlib
import importlib.metadata
import json
import math
import os
import platform
import resource
import statistics
import subprocess
import sys
import time
import tracemalloc
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

ROW_KEYS = (
    "case",
    "system",
    "parameters",
    "value",
    "lower",
    "upper",
    "relative_gap",
    "seconds",
    "peak_memory_mb",
    "backend",
    "notes",
    "status",
    "extra",
)
SYSTEMS = ("pldshuffle", "dp-accounting")
STATUSES = ("ok", "skipped", "error")


def log(message: str) -> None:
    """Progress line on stderr (the suites can take minutes)."""
    stamp = _dt.datetime.now().strftime("%H:%M:%S")
    print(f"[{stamp}] {message}", file=sys.stderr, flush=True)


# ---------------------------------------------------------------------------------------------- timing
class Timing:
    """Result of :func:`time_call`: the return value of the last repeat plus wall/CPU statistics."""

    def __init__(self, result: Any, walls: list[float], cpus: list[float]) -> None:
        self.result = result
        self.walls = walls
        self.cpus = cpus

    @property
    def seconds(self) -> float:
        return float(statistics.median(self.walls))

    @property
    def cpu_seconds(self) -> float:
        return float(statistics.median(self.cpus))

    def as_extra(self) -> dict[str, Any]:
        return {
            "repeats": len(self.walls),
            "wall_seconds_each": [round(w, 6) for w in self.walls],
            "cpu_seconds_median": round(self.cpu_seconds, 6),
        }


def time_once(fn: Callable[[], Any]) -> tuple[Any, float, float]:
    """``(result, wall seconds, process CPU seconds)`` of one call (garbage collected beforehand)."""
    gc.collect()
    c0, t0 = time.process_time(), time.perf_counter()
    result = fn()
    t1, c1 = time.perf_counter(), time.process_time()
    return result, t1 - t0, c1 - c0


def time_call(fn: Callable[[], Any], *, repeats: int = 3, cheap_seconds: float = 5.0) -> Timing:
    """Median of up to ``repeats`` calls; a single call when the first one takes ``>= cheap_seconds``."""
    walls: list[float] = []
    cpus: list[float] = []
    result = None
    for i in range(max(1, repeats)):
        result, wall, cpu = time_once(fn)
        walls.append(wall)
        cpus.append(cpu)
        if i == 0 and wall >= cheap_seconds:
            break
    return Timing(result, walls, cpus)


# ---------------------------------------------------------------------------------------------- memory
def maxrss_mb() -> float:
    """Peak resident set size of this process so far (MiB; Linux reports KiB, macOS bytes)."""
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return rss / (2**20 if sys.platform == "darwin" else 2**10)


def peak_memory(fn: Callable[[], Any]) -> tuple[Any, float, float]:
    """Run ``fn`` once under tracemalloc: ``(result, peak traced MiB, ru_maxrss increase MiB)``.

    tracemalloc sees Python objects and NumPy/pyFFTW buffers; memory allocated inside numba-compiled
    code (NRT) or by C libraries directly is not traced, so the ``ru_maxrss`` increase (a process-wide
    high-water mark, 0 when an earlier step already went higher) is recorded next to it.
    """
    gc.collect()
    rss0 = maxrss_mb()
    tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        result = fn()
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    return result, peak / 2**20, max(0.0, maxrss_mb() - rss0)


# ---------------------------------------------------------------------------------------------- machine
def _version(dist: str) -> str | None:
    try:
        return importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        return None


def _total_memory_gib() -> float | None:
    with contextlib.suppress(OSError, ValueError):
        with open("/proc/meminfo", encoding="ascii") as fh:
            for line in fh:
                if line.startswith("MemTotal:"):
                    return round(int(line.split()[1]) / 2**20, 2)
    return None


def _cpu_model() -> str:
    with contextlib.suppress(OSError):
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as fh:
            for line in fh:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    return platform.processor() or platform.machine()


def _git_commit() -> str | None:
    """Read-only: the checked-out commit and whether the tree has local changes."""
    root = Path(__file__).resolve().parent.parent
    with contextlib.suppress(OSError, subprocess.SubprocessError):
        head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=root, capture_output=True, text=True, timeout=10)
        if head.returncode != 0:
            return None
        dirty = subprocess.run(["git", "status", "--porcelain"], cwd=root, capture_output=True, text=True, timeout=10)
        return head.stdout.strip() + ("+local-changes" if dirty.stdout.strip() else "")
    return None


def load_average() -> list[float] | None:
    with contextlib.suppress(OSError, AttributeError):
        return [round(x, 2) for x in os.getloadavg()]
    return None


def machine_info() -> dict[str, Any]:
    """Platform, CPUs, memory, load and the versions of everything that affects the numbers."""
    affinity = None
    with contextlib.suppress(AttributeError):
        affinity = len(os.sched_getaffinity(0))
    return {
        "platform": platform.platform(),
        "machine": platform.machine(),
        "cpu_model": _cpu_model(),
        "cpu_count": os.cpu_count(),
        "cpu_affinity": affinity,
        "memory_gib": _total_memory_gib(),
        "load_average_at_start": load_average(),
        "python": platform.python_version(),
        "versions": {
            name: _version(dist)
            for name, dist in (
                ("pldshuffle", "pldshuffle"),
                ("numpy", "numpy"),
                ("scipy", "scipy"),
                ("numba", "numba"),
                ("pyfftw", "pyFFTW"),
                ("dp_accounting", "dp-accounting"),
            )
        },
        "git_commit": _git_commit(),
        "fft_threads_env": {k: os.environ[k] for k in ("OMP_NUM_THREADS", "PYFFTW_NUM_THREADS", "NUMBA_NUM_THREADS") if k in os.environ},
    }


def optional_import(module: str) -> tuple[Any | None, str | None]:
    """``(module, None)`` or ``(None, reason)`` -- used to skip cases whose code is not there yet."""
    try:
        return importlib.import_module(module), None
    except Exception as exc:  # noqa: BLE001 - any import failure means "skip and say why"
        return None, f"{type(exc).__name__}: {exc}"


# ---------------------------------------------------------------------------------------------- rows
def _clean(value: Any) -> Any:
    """JSON-safe copy: floats stay floats (non-finite -> string), numpy scalars -> Python."""
    if isinstance(value, Mapping):
        return {str(k): _clean(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_clean(v) for v in value]
    if hasattr(value, "item") and callable(value.item) and getattr(value, "ndim", 1) == 0:
        value = value.item()
    if isinstance(value, float):
        return value if math.isfinite(value) else ("inf" if value > 0 else "-inf" if value < 0 else "nan")
    if value is None or isinstance(value, (bool, int, str)):
        return value
    return str(value)


def relative_gap(lower: float | None, upper: float | None) -> float | None:
    if lower is None or upper is None:
        return None
    if upper == 0:
        return 0.0
    if not math.isfinite(upper):
        return 0.0 if lower == upper else math.inf
    return (upper - lower) / upper


def make_row(
    case: str,
    system: str,
    parameters: Mapping[str, Any],
    *,
    value: float | None = None,
    lower: float | None = None,
    upper: float | None = None,
    relative_gap_value: float | None = None,
    seconds: float | None = None,
    peak_memory_mb: float | None = None,
    backend: str | None = None,
    notes: str = "",
    status: str = "ok",
    extra: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    if system not in SYSTEMS:
        raise ValueError(f"system must be one of {SYSTEMS}, got {system!r}")
    if status not in STATUSES:
        raise ValueError(f"status must be one of {STATUSES}, got {status!r}")
    gap = relative_gap_value if relative_gap_value is not None else relative_gap(lower, upper)
    row = {
        "case": case,
        "system": system,
        "parameters": dict(parameters),
        "value": value,
        "lower": lower,
        "upper": upper,
        "relative_gap": gap,
        "seconds": seconds,
        "peak_memory_mb": peak_memory_mb,
        "backend": backend,
        "notes": notes,
        "status": status,
        "extra": dict(extra or {}),
    }
    return _clean(row)


def validate_row(row: Mapping[str, Any]) -> list[str]:
    """Problems with one row (empty list when it follows the schema)."""
    problems = []
    missing = [k for k in ROW_KEYS if k not in row]
    if missing:
        problems.append(f"missing keys {missing}")
        return problems
    if row["system"] not in SYSTEMS:
        problems.append(f"bad system {row['system']!r}")
    if row["status"] not in STATUSES:
        problems.append(f"bad status {row['status']!r}")
    if not isinstance(row["case"], str) or not row["case"]:
        problems.append("case must be a non-empty string")
    if not isinstance(row["parameters"], dict) or not isinstance(row["extra"], dict):
        problems.append("parameters and extra must be objects")
    if not isinstance(row["notes"], str):
        problems.append("notes must be a string")
    numeric = ("value", "lower", "upper", "relative_gap", "seconds", "peak_memory_mb")
    for key in numeric:
        v = row[key]
        if v is not None and not isinstance(v, (int, float)) and v not in ("inf", "-inf", "nan"):
            problems.append(f"{key} must be a number or null, got {v!r}")
    if row["status"] == "ok":
        for key in ("value", "seconds"):
            if not isinstance(row[key], (int, float)):
                problems.append(f"ok row needs a numeric {key}")
        lo, up = row["lower"], row["upper"]
        if isinstance(lo, (int, float)) and isinstance(up, (int, float)) and lo > up:
            problems.append(f"lower {lo} > upper {up}")
    return problems


def error_row(case: str, system: str, parameters: Mapping[str, Any], exc: BaseException, seconds: float | None = None) -> dict[str, Any]:
    return make_row(case, system, parameters, seconds=seconds, status="error", notes=f"{type(exc).__name__}: {exc}")


def skipped_row(case: str, system: str, parameters: Mapping[str, Any], reason: str) -> dict[str, Any]:
    return make_row(case, system, parameters, status="skipped", notes=reason)


# ---------------------------------------------------------------------------------------------- output
def write_json(path: Path, payload: Mapping[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text(json.dumps(_clean(payload), indent=1, allow_nan=False) + "\n", encoding="utf-8")
    tmp.replace(path)


def fmt(value: Any, kind: str = "g") -> str:
    """Compact Markdown cell: '–' for missing, 6 significant digits, gaps in e-notation."""
    if value is None or value == "":
        return "–"
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int) and kind != "s":
        return str(value)
    v = float(value)
    if not math.isfinite(v):
        return "inf" if v > 0 else "nan"
    if kind == "gap":
        return f"{v:.2e}"
    if kind == "s":
        return f"{v:.3f}" if v < 100 else f"{v:.1f}"
    if kind == "mb":
        return f"{v:.1f}"
    if kind == "x":
        return f"{v:.2f}x"
    return f"{v:.6g}"


def markdown_table(header: Iterable[str], rows: Iterable[Iterable[str]]) -> str:
    header = list(header)
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for r in rows:
        lines.append("| " + " | ".join(str(c).replace("|", "\\|").replace("\n", " ") for c in r) + " |")
    return "\n".join(lines)


def short_parameters(params: Mapping[str, Any], skip: Iterable[str] = ()) -> str:
    skip = set(skip)
    return ", ".join(f"{k}={fmt(v)}" for k, v in params.items() if k not in skip)
