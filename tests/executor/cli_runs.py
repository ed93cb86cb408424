"""What the executor tests share: the CLI as a subprocess with the no-LLM defaults, killing a
run midway, and a knowledge graph's triplets as exported lines."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

BIORAG = [sys.executable, "-m", "biorag.cli.main"]


def no_llm_env(home: Path, **extra: str) -> dict[str, str]:
    """This environment without BIORAG_ settings, plus ``home``, no LLM and no progress bars."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("BIORAG_")}
    env.update(BIORAG_HOME=str(home), BIORAG_PROGRESS="0", BIORAG_LLM_BACKEND="none", **extra)
    return env


def kill_midway(
    cmd: list[str],
    env: dict[str, str],
    done: Callable[[], int],
    low: int,
    high: int,
    timeout: float = 300,
) -> None:
    """Start ``cmd`` in a session of its own and SIGKILL the whole session as soon as
    ``low <= done() < high``; the test fails if the command ended before that."""
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            start_new_session=True)  # fmt: skip
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and proc.poll() is None:
        if low <= done() < high:
            os.killpg(proc.pid, signal.SIGKILL)
            break
        time.sleep(0.02)
    proc.wait(timeout=60)
    if proc.returncode == 0:
        pytest.fail(f"{' '.join(cmd[3:5])} ended before it could be killed midway")


def whole_lines(path: Path) -> int:
    """Lines a running command has finished writing to ``path`` (0 before it exists)."""
    return path.read_bytes().count(b"\n") if path.exists() else 0


def exported_triplets(kg: Path, home: Path) -> list[str]:
    """``biorag kg export --format jsonl`` of ``kg``, line by line."""
    dump = kg.parent / f"{kg.name}.jsonl"
    r = subprocess.run([*BIORAG, "kg", "export", "--kg", str(kg), "--format", "jsonl", "--out",
                        str(dump)], env=no_llm_env(home), capture_output=True, text=True,
                       timeout=300)  # fmt: skip
    assert r.returncode == 0, r.stderr[-2000:]
    return dump.read_text().splitlines()
