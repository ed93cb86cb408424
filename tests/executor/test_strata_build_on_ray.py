"""`biorag strata build` extracting and normalizing on the local Ray cluster (a head and two
one-CPU workers): killed midway, then run again, it stores what a local build stores."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from tests.executor.cli_runs import BIORAG, exported_triplets, kill_midway, no_llm_env, whole_lines
from tests.strata.test_strata_checkpoint import demo_papers

from biorag.strata.extract_papers import CHECKPOINT

N = 40
SAME_EXCEPT = (
    "db_path", "papers_resumed", "mentions_resumed", "executor", "normalize_executor",
    "vectorgraphrag",
)  # fmt: skip


def _report(out: Path) -> dict:
    d = json.loads((out / "build_report.json").read_text())
    return {k: v for k, v in d.items() if k not in SAME_EXCEPT}


def test_a_strata_build_killed_on_ray_resumes_to_the_local_graph(ray_cluster, tmp_path):
    papers = tmp_path / "papers.jsonl"
    papers.write_text("".join(json.dumps(p) + "\n" for p in demo_papers(N)), encoding="utf-8")
    build = [*BIORAG, "strata", "build", "--papers", str(papers), "--json", "--out"]
    r = subprocess.run([*build, str(tmp_path / "local")], env=no_llm_env(tmp_path / "home"),
                       capture_output=True, text=True, timeout=600)  # fmt: skip
    assert r.returncode == 0, r.stderr[-2000:]

    out = tmp_path / "ray"
    cmd = [*build, str(out), "--executor", "ray", "--ray-address", ray_cluster.address]
    env = no_llm_env(tmp_path / "home", BIORAG_EXECUTOR_BATCH_SIZE="2")
    kill_midway(cmd, env, lambda: whole_lines(out / CHECKPOINT), 3, N)  # header + a batch
    r = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr[-2000:]
    report = json.loads(r.stdout)
    assert 2 <= report["papers_resumed"] < N
    workers = report["executor"]["workers"]
    assert sum(w["rows"] for w in workers.values()) == N - report["papers_resumed"]
    # the mentions were normalized on the workers too, every one of them (none was resumed)
    normalized = report["normalize_executor"]["workers"]
    assert report["mentions_resumed"] == 0 and sum(w["rows"] for w in normalized.values()) > N
    assert _report(out) == _report(tmp_path / "local")
    assert exported_triplets(out, tmp_path) == exported_triplets(tmp_path / "local", tmp_path)
