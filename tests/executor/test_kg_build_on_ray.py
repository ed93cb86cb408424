"""`biorag kg build` extracting on the local Ray cluster (a head and two one-CPU workers):
the graph it stores is the local build's, triplet for triplet and in the same order, and a
build killed midway resumes with the units its checkpoint lacks."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from tests.kg.test_extract_units import medmcqa

from biorag.kg.extract_units import CHECKPOINT

BIORAG = [sys.executable, "-m", "biorag.cli.main"]
N = 60


def _env(home: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("BIORAG_")}
    env.update(BIORAG_HOME=str(home), BIORAG_PROGRESS="0", BIORAG_LLM_BACKEND="none", **extra)
    return env


def _build(src: Path, out: Path, *extra: str) -> list[str]:
    return [*BIORAG, "kg", "build", "--from", str(src), "--format", "medmcqa", "--out",
            str(out), "--json", *extra]  # fmt: skip


def _triplets(kg: Path, home: Path) -> list[str]:
    dump = kg.parent / f"{kg.name}.jsonl"
    r = subprocess.run([*BIORAG, "kg", "export", "--kg", str(kg), "--format", "jsonl", "--out",
                        str(dump)], env=_env(home), capture_output=True, text=True,
                       timeout=300)  # fmt: skip
    assert r.returncode == 0, r.stderr[-2000:]
    return dump.read_text().splitlines()


@pytest.fixture(scope="module")
def local_kg(tmp_path_factory) -> tuple[Path, Path]:
    root = tmp_path_factory.mktemp("kg_ray")
    src = medmcqa(root / "dev.json", N)
    r = subprocess.run(_build(src, root / "local"), env=_env(root / "home"),
                       capture_output=True, text=True, timeout=600)  # fmt: skip
    assert r.returncode == 0, r.stderr[-2000:]
    return src, root / "local"


def test_a_kg_built_on_ray_is_the_local_one(ray_cluster, local_kg, tmp_path):
    src, local = local_kg
    cmd = _build(src, tmp_path / "kg", "--executor", "ray", "--ray-address", ray_cluster.address)
    env = _env(tmp_path / "home", BIORAG_EXECUTOR_BATCH_SIZE="8")
    r = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr[-2000:]
    report = json.loads(r.stdout)
    workers = report["executor"]["workers"]
    assert len(workers) == 2 and sum(w["rows"] for w in workers.values()) == N
    assert _triplets(tmp_path / "kg", tmp_path) == _triplets(local, tmp_path)
    assert not (tmp_path / "kg" / CHECKPOINT).exists()


def test_a_kg_build_killed_on_ray_resumes(ray_cluster, local_kg, tmp_path):
    src, local = local_kg
    out = tmp_path / "kg"
    cmd = _build(src, out, "--executor", "ray", "--ray-address", ray_cluster.address)
    env = _env(tmp_path / "home", BIORAG_EXECUTOR_BATCH_SIZE="2")
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            start_new_session=True)  # fmt: skip
    deadline = time.monotonic() + 300
    path = out / CHECKPOINT
    while time.monotonic() < deadline and proc.poll() is None:
        if path.exists() and 3 <= len(path.read_text().splitlines()) < N:
            os.killpg(proc.pid, signal.SIGKILL)
            break
        time.sleep(0.02)
    proc.wait(timeout=60)
    if proc.returncode == 0:
        pytest.fail("the build ended before it could be killed midway")
    r = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr[-2000:]
    report = json.loads(r.stdout)
    assert 2 <= report["units_resumed"] < N
    assert sum(w["rows"] for w in report["executor"]["workers"].values()) == (
        N - report["units_resumed"]
    )  # only the units left were sent to the workers
    assert _triplets(out, tmp_path) == _triplets(local, tmp_path)
