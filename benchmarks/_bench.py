"""What the benchmark scripts share: thread pinning (before numpy loads), memory readings and
provenance.

Import it first, then call :func:`pin_threads` before importing numpy, FAISS or torch::

    from _bench import pin_threads
    THREADS = pin_threads()
    import numpy as np  # noqa: E402
"""

from __future__ import annotations

import os
import resource
import sys
from pathlib import Path

THREAD_VARS = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")


def pin_threads(default: str = "2") -> str:
    """The thread count given as ``--threads N`` / ``--threads=N`` (else ``default``), set as
    the BLAS/OpenMP thread count unless the environment already sets one."""
    threads = default
    for i, arg in enumerate(sys.argv):
        if arg == "--threads" and i + 1 < len(sys.argv):
            threads = sys.argv[i + 1]
        elif arg.startswith("--threads="):
            threads = arg.split("=", 1)[1]
    for var in THREAD_VARS:
        os.environ.setdefault(var, threads)
    return threads


def status_gb(field: str) -> float:
    """A memory field of /proc/self/status (``VmRSS``, ``VmHWM``) in GB; where there is no
    /proc, the process's peak RSS from getrusage."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith(field + ":"):
                return int(line.split()[1]) / 1e6  # kB -> GB
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1e6


def reset_peak() -> bool:
    """Reset VmHWM (peak RSS) to the current RSS; False where the kernel does not allow it."""
    try:
        Path("/proc/self/clear_refs").write_text("5")
        return True
    except OSError:
        return False


def peak_gb(digits: int = 3) -> float:
    """The peak RSS since the last :func:`reset_peak`, in GB."""
    return round(status_gb("VmHWM"), digits)


def rss_gb(digits: int = 3) -> float:
    """The current RSS, in GB."""
    return round(status_gb("VmRSS"), digits)


def biorag_commit() -> str:
    """The commit of the ``biorag`` package this process imports (``git -C`` its folder, not the
    working directory: a worktree's benchmark run with main's editable install runs main's
    code), ``-dirty`` where its files differ from that commit; ``unknown`` outside a checkout."""
    import subprocess

    import biorag

    pkg = Path(biorag.__file__).resolve().parent

    def git(*args: str) -> str:
        r = subprocess.run(["git", "-C", str(pkg), *args], capture_output=True, text=True)
        return r.stdout.strip() if r.returncode == 0 else ""

    commit = git("rev-parse", "--short", "HEAD")
    if not commit:
        return "unknown"
    # the package folder only (src/biorag in a checkout): a changed benchmark script or doc
    # leaves the code that ran as committed
    return commit + ("-dirty" if git("status", "--porcelain", "--", ".") else "")


def provenance() -> dict[str, str]:
    """Where a result came from: machine, the commit of the biorag that ran
    (:func:`biorag_commit`), and the command that produced it."""
    import platform

    return {
        "machine": f"{platform.machine()}, {os.cpu_count()} CPUs",
        "commit": biorag_commit(),
        "command": " ".join(["python", *sys.argv]),
    }
