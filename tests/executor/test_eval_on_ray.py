"""An evaluation answered on the local Ray cluster (a head and two one-CPU workers): the same
predictions as a local run, and a run killed midway resumes with the
pairs that have no record, none answered twice."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

DEMO = Path(__file__).resolve().parents[2] / "src" / "biorag" / "demo" / "data"
BIORAG = [sys.executable, "-m", "biorag.cli.main"]
LETTERS = {"A": "yes", "B": "no", "C": "maybe"}
N_QUESTIONS = 8
METHODS = "retrieve-read,claims"
# what a pair's answer is; seconds, token counts and accounting differ from run to run
SAME = ("prediction", "correct", "parse_failed", "evidence", "documents", "context", "error")


def _env(home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("BIORAG_")}
    env.update(BIORAG_HOME=str(home), BIORAG_PROGRESS="0", BIORAG_LLM_BACKEND="none")
    return env


@pytest.fixture(scope="module")
def inputs(tmp_path_factory) -> dict[str, Path]:
    """The first bundled PubMedQA questions (PQA-L format) and an index of 60 abstracts,
    their own among them."""
    root = tmp_path_factory.mktemp("eval_ray")
    qs = [json.loads(x) for x in (DEMO / "questions.jsonl").read_text().splitlines()]
    docs = [json.loads(x) for x in (DEMO / "pubmedqa_sample.jsonl").read_text().splitlines()]
    by_id = {d["id"]: d for d in docs}
    data = {
        q["id"]: {
            "QUESTION": q["question"],
            "CONTEXTS": [by_id[q["id"]]["text"]],
            "LABELS": ["BACKGROUND"],
            "final_decision": LETTERS[q["gold"]],
        }
        for q in qs[:N_QUESTIONS]
    }
    (root / "pqal.json").write_text(json.dumps(data), encoding="utf-8")
    corpus = root / "corpus.jsonl"
    keep = [by_id[q] for q in data] + [d for d in docs if d["id"] not in data][:52]
    corpus.write_text("".join(json.dumps(d) + "\n" for d in keep), encoding="utf-8")
    idx = root / "idx"
    r = subprocess.run(
        [*BIORAG, "index", "build", "--corpus", str(corpus), "--out", str(idx)],
        env=_env(root / "home"), capture_output=True, text=True, timeout=600,
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


def _whole_lines(path: Path) -> int:
    """Records written so far by a run that may be writing (a line not yet ended is not one)."""
    return path.read_bytes().count(b"\n") if path.exists() else 0


def _answers(out: Path) -> dict[tuple[str, str], dict[str, Any]]:
    return {(r["method"], r["question_id"]): {k: r[k] for k in SAME} for r in _records(out)}


@pytest.fixture(scope="module")
def local_run(inputs) -> Path:
    out = inputs["root"] / "local"
    r = subprocess.run(_eval(inputs, out), env=_env(inputs["root"] / "home"),
                       capture_output=True, text=True, timeout=900)  # fmt: skip
    assert r.returncode == 0, r.stderr[-2000:]
    return out


def test_an_eval_on_ray_answers_as_a_local_one(ray_cluster, inputs, local_run, tmp_path):
    out = tmp_path / "ray"
    cmd = _eval(inputs, out, "--executor", "ray", "--ray-address", ray_cluster.address)
    r = subprocess.run(cmd, env=_env(tmp_path / "home"), capture_output=True, text=True,
                       timeout=900)  # fmt: skip
    assert r.returncode == 0, r.stderr[-2000:]
    assert "answered on ray: 2 workers" in r.stderr  # one actor on each worker node
    got, want = _answers(out), _answers(local_run)
    assert len(got) == N_QUESTIONS * 2 and got == want
    metrics = json.loads((out / "metrics.json").read_text())
    local = json.loads((local_run / "metrics.json").read_text())
    for m in METHODS.split(","):
        assert metrics["methods"][m]["accuracy"] == local["methods"][m]["accuracy"]


def test_an_eval_killed_on_ray_resumes_without_asking_twice(
    ray_cluster, inputs, local_run, tmp_path
):
    out = tmp_path / "ray"
    cmd = _eval(inputs, out, "--executor", "ray", "--ray-address", ray_cluster.address)
    env = _env(tmp_path / "home")
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            start_new_session=True)  # fmt: skip
    deadline = time.monotonic() + 600
    while time.monotonic() < deadline and proc.poll() is None:
        if 0 < _whole_lines(out / "predictions.jsonl") < N_QUESTIONS * 2:
            os.killpg(proc.pid, signal.SIGKILL)
            break
        time.sleep(0.05)
    proc.wait(timeout=60)
    if proc.returncode == 0:
        pytest.fail("the eval ended before it could be killed midway")
    first = _whole_lines(out / "predictions.jsonl")
    assert 0 < first < N_QUESTIONS * 2
    r = subprocess.run([*cmd], env=env, capture_output=True, text=True, timeout=900)
    assert r.returncode == 0, r.stderr[-2000:]
    records = _records(out)
    assert len(records) == N_QUESTIONS * 2  # every pair once: none asked again
    assert _answers(out) == _answers(local_run)
