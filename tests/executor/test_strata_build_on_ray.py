"""`biorag strata build` extracting on the local Ray cluster (a head and two one-CPU workers):
killed midway, then run again, it stores what a local build stores."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from tests.strata.test_strata_checkpoint import demo_papers

from biorag.strata.extract_papers import CHECKPOINT

BIORAG = [sys.executable, "-m", "biorag.cli.main"]
N = 40
SAME_EXCEPT = ("db_path", "papers_resumed", "executor", "vectorgraphrag")


def _env(home: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("BIORAG_")}
    env.update(BIORAG_HOME=str(home), BIORAG_PROGRESS="0", BIORAG_LLM_BACKEND="none", **extra)
    return env


def _report(out: Path) -> dict:
    d = json.loads((out / "build_report.json").read_text())
    return {k: v for k, v in d.items() if k not in SAME_EXCEPT}


def _flat(out: Path, home: Path) -> list[str]:
    dump = out.parent / f"{out.name}.jsonl"
    r = subprocess.run([*BIORAG, "kg", "export", "--kg", str(out), "--format", "jsonl", "--out",
                        str(dump)], env=_env(home), capture_output=True, text=True,
                       timeout=300)  # fmt: skip
    assert r.returncode == 0, r.stderr[-2000:]
    return dump.read_text().splitlines()


def test_a_strata_build_killed_on_ray_resumes_to_the_local_graph(ray_cluster, tmp_path):
    papers = tmp_path / "papers.jsonl"
    papers.write_text("".join(json.dumps(p) + "\n" for p in demo_papers(N)), encoding="utf-8")
    build = [*BIORAG, "strata", "build", "--papers", str(papers), "--json", "--out"]
    r = subprocess.run([*build, str(tmp_path / "local")], env=_env(tmp_path / "home"),
                       capture_output=True, text=True, timeout=600)  # fmt: skip
    assert r.returncode == 0, r.stderr[-2000:]

    out = tmp_path / "ray"
    cmd = [*build, str(out), "--executor", "ray", "--ray-address", ray_cluster.address]
    env = _env(tmp_path / "home", BIORAG_EXECUTOR_BATCH_SIZE="2")
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            start_new_session=True)  # fmt: skip
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline and proc.poll() is None:
        path = out / CHECKPOINT
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
    assert 2 <= report["papers_resumed"] < N
    workers = report["executor"]["workers"]
    assert sum(w["rows"] for w in workers.values()) == N - report["papers_resumed"]
    assert _report(out) == _report(tmp_path / "local")
    assert _flat(out, tmp_path) == _flat(tmp_path / "local", tmp_path)
