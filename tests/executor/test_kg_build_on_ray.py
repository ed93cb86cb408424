"""`biorag kg build` extracting on the local Ray cluster (a head and two one-CPU workers):
the graph it stores is the local build's, triplet for triplet and in the same order, and a
build killed midway resumes with the units its checkpoint lacks."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from tests.executor.cli_runs import BIORAG, exported_triplets, kill_midway, no_llm_env, whole_lines
from tests.kg.test_extract_units import medmcqa

from biorag.kg.extract_units import CHECKPOINT

N = 60


def _build(src: Path, out: Path, *extra: str) -> list[str]:
    return [*BIORAG, "kg", "build", "--from", str(src), "--format", "medmcqa", "--out",
            str(out), "--json", *extra]  # fmt: skip


@pytest.fixture(scope="module")
def local_kg(tmp_path_factory) -> tuple[Path, Path]:
    root = tmp_path_factory.mktemp("kg_ray")
    src = medmcqa(root / "dev.json", N)
    r = subprocess.run(_build(src, root / "local"), env=no_llm_env(root / "home"),
                       capture_output=True, text=True, timeout=600)  # fmt: skip
    assert r.returncode == 0, r.stderr[-2000:]
    return src, root / "local"


def test_a_kg_built_on_ray_is_the_local_one(ray_cluster, local_kg, tmp_path):
    src, local = local_kg
    cmd = _build(src, tmp_path / "kg", "--executor", "ray", "--ray-address", ray_cluster.address)
    env = no_llm_env(tmp_path / "home", BIORAG_EXECUTOR_BATCH_SIZE="8")
    r = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr[-2000:]
    report = json.loads(r.stdout)
    workers = report["executor"]["workers"]
    assert len(workers) == 2 and sum(w["rows"] for w in workers.values()) == N
    assert exported_triplets(tmp_path / "kg", tmp_path) == exported_triplets(local, tmp_path)
    assert not (tmp_path / "kg" / CHECKPOINT).exists()


def test_a_kg_build_killed_on_ray_resumes(ray_cluster, local_kg, tmp_path):
    src, local = local_kg
    out = tmp_path / "kg"
    cmd = _build(src, out, "--executor", "ray", "--ray-address", ray_cluster.address)
    env = no_llm_env(tmp_path / "home", BIORAG_EXECUTOR_BATCH_SIZE="2")
    kill_midway(cmd, env, lambda: whole_lines(out / CHECKPOINT), 3, N)  # header + a batch
    r = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr[-2000:]
    report = json.loads(r.stdout)
    assert 2 <= report["units_resumed"] < N
    assert sum(w["rows"] for w in report["executor"]["workers"].values()) == (
        N - report["units_resumed"]
    )  # only the units left were sent to the workers
    assert exported_triplets(out, tmp_path) == exported_triplets(local, tmp_path)
