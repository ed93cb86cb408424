"""An evaluation answered on the local Ray cluster (a head and two one-CPU workers): the same
predictions as a local run, and a run killed midway resumes with the
pairs that have no record, none answered twice."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest
from tests.demo_data import DEMO, write_pqal
from tests.executor.cli_runs import BIORAG, kill_midway, no_llm_env, whole_lines

N_QUESTIONS = 8
METHODS = "retrieve-read,claims"
# what a pair's answer is; seconds, token counts and accounting differ from run to run
SAME = ("prediction", "correct", "parse_failed", "evidence", "documents", "context", "error",
        "cited_sentences")  # fmt: skip


@pytest.fixture(scope="module")
def inputs(tmp_path_factory) -> dict[str, Path]:
    """The first bundled PubMedQA questions (PQA-L format) and an index of 60 abstracts,
    their own among them."""
    root = tmp_path_factory.mktemp("eval_ray")
    ids = set(write_pqal(root / "pqal.json", N_QUESTIONS))
    docs = [json.loads(x) for x in (DEMO / "pubmedqa_sample.jsonl").read_text().splitlines()]
    keep = [d for d in docs if d["id"] in ids] + [d for d in docs if d["id"] not in ids][:52]
    corpus = root / "corpus.jsonl"
    corpus.write_text("".join(json.dumps(d) + "\n" for d in keep), encoding="utf-8")
    idx = root / "idx"
    r = subprocess.run(
        [*BIORAG, "index", "build", "--corpus", str(corpus), "--out", str(idx)],
        env=no_llm_env(root / "home"), capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert r.returncode == 0, r.stderr[-2000:]
    return {"data": root / "pqal.json", "index": idx, "root": root}


def _eval(inputs: dict[str, Path], out: Path, *extra: str) -> list[str]:
    return [
        *BIORAG, "eval", "--dataset", "pubmedqa", "--data", str(inputs["data"]),
        "--index", str(inputs["index"]), "--methods", METHODS, "--out", str(out),
        "--concurrency", "1", "--json", *extra,
    ]  # fmt: skip


def _records(out: Path) -> list[dict[str, Any]]:
    path = out / "predictions.jsonl"
    return [json.loads(x) for x in path.read_text().splitlines() if x.strip()]


def _answers(out: Path) -> dict[tuple[str, str], dict[str, Any]]:
    return {(r["method"], r["question_id"]): {k: r[k] for k in SAME} for r in _records(out)}


@pytest.fixture(scope="module")
def local_run(inputs) -> Path:
    out = inputs["root"] / "local"
    r = subprocess.run(_eval(inputs, out), env=no_llm_env(inputs["root"] / "home"),
                       capture_output=True, text=True, timeout=900)  # fmt: skip
    assert r.returncode == 0, r.stderr[-2000:]
    return out


def test_an_eval_on_ray_answers_as_a_local_one(ray_cluster, inputs, local_run, tmp_path):
    out = tmp_path / "ray"
    cmd = _eval(inputs, out, "--executor", "ray", "--ray-address", ray_cluster.address)
    r = subprocess.run(cmd, env=no_llm_env(tmp_path / "home"), capture_output=True, text=True,
                       timeout=900)  # fmt: skip
    assert r.returncode == 0, r.stderr[-2000:]
    assert "answered on ray: 2 workers" in r.stderr  # one actor on each worker node
    got, want = _answers(out), _answers(local_run)
    assert len(got) == N_QUESTIONS * 2 and got == want
    # every sentence answered on Ray carries its verdict, the same as answered here
    sentences = [s for a in got.values() for s in a["cited_sentences"]]
    assert sentences and all(s["support"]["label"] for s in sentences)
    assert all(
        r["verification"]["verifier"] == "rules" for r in _records(out) if r["cited_sentences"]
    )
    metrics = json.loads((out / "metrics.json").read_text())
    local = json.loads((local_run / "metrics.json").read_text())
    for m in METHODS.split(","):
        assert metrics["methods"][m]["accuracy"] == local["methods"][m]["accuracy"]


def test_an_eval_killed_on_ray_resumes_without_asking_twice(
    ray_cluster, inputs, local_run, tmp_path
):
    out = tmp_path / "ray"
    cmd = _eval(inputs, out, "--executor", "ray", "--ray-address", ray_cluster.address)
    env = no_llm_env(tmp_path / "home")
    predictions = out / "predictions.jsonl"
    kill_midway(cmd, env, lambda: whole_lines(predictions), 1, N_QUESTIONS * 2, timeout=600)
    first = whole_lines(predictions)
    assert 0 < first < N_QUESTIONS * 2
    r = subprocess.run([*cmd], env=env, capture_output=True, text=True, timeout=900)
    assert r.returncode == 0, r.stderr[-2000:]
    records = _records(out)
    assert len(records) == N_QUESTIONS * 2  # every pair once: none asked again
    assert _answers(out) == _answers(local_run)
