"""A short evaluation on real llama-servers: killed midway and resumed; and spread over two
servers, one of which is killed midway (the run finishes, nothing lost, nothing asked twice)."""

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
from tests.real_llm.conftest import DEMO, llm_env
from tests.real_llm.servers import LlamaServer

pytestmark = pytest.mark.real_llm

LETTERS = {"A": "yes", "B": "no", "C": "maybe"}


def _pqal(path: Path, n: int) -> list[str]:
    """A PubMedQA-format file of the first ``n`` bundled questions with their abstracts."""
    qs = [json.loads(x) for x in (DEMO / "questions.jsonl").read_text().splitlines()[:n]]
    docs = {
        d["id"]: d
        for d in map(json.loads, (DEMO / "pubmedqa_sample.jsonl").read_text().splitlines())
    }
    data = {
        q["id"]: {
            "QUESTION": q["question"],
            "CONTEXTS": [docs[q["id"]]["text"]],
            "LABELS": ["BACKGROUND"],
            "final_decision": LETTERS[q["gold"]],
        }
        for q in qs
    }
    path.write_text(json.dumps(data), encoding="utf-8")
    return list(data)


def _eval_cmd(data: Path, out: Path) -> list[str]:
    return [
        sys.executable, "-m", "biorag.cli.main", "eval", "--dataset", "pubmedqa",
        "--data", str(data), "--setting", "reasoning-required",
        "--methods", "retrieve-read", "--out", str(out), "--concurrency", "2", "--json",
    ]  # fmt: skip


def _predictions(out: Path) -> list[dict[str, Any]]:
    path = out / "predictions.jsonl"
    if not path.exists():
        return []
    return [json.loads(x) for x in path.read_text().splitlines() if x.strip()]


def _wait_for(out: Path, n: int, proc: subprocess.Popen[str], timeout: float = 600) -> None:
    deadline = time.monotonic() + timeout
    while len(_predictions(out)) < n:
        assert proc.poll() is None, proc.stderr.read() if proc.stderr else ""
        assert time.monotonic() < deadline, "the eval made no progress"
        time.sleep(0.5)


def test_eval_killed_midway_resumes_without_losing_or_repeating(
    llama: LlamaServer, tmp_path: Path
) -> None:
    ids = _pqal(tmp_path / "ori_pqal.json", 10)
    out = tmp_path / "run"
    env = llm_env(llama.url, tmp_path / "home")
    proc = subprocess.Popen(
        _eval_cmd(tmp_path / "ori_pqal.json", out),
        env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        start_new_session=True,
    )  # fmt: skip
    _wait_for(out, 3, proc)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    done_before = {p["question_id"] for p in _predictions(out)}
    assert 3 <= len(done_before) < 10
    r = subprocess.run(
        _eval_cmd(tmp_path / "ori_pqal.json", out), env=env, capture_output=True, text=True,
        timeout=900, check=False,
    )  # fmt: skip
    assert r.returncode == 0, r.stderr[-3000:]
    preds = _predictions(out)
    assert sorted(p["question_id"] for p in preds) == sorted(ids)  # each once, none lost
    unanswered = [p for p in preds if p.get("prediction") not in LETTERS]
    assert not unanswered, unanswered


def test_eval_over_two_servers_survives_one_being_killed(
    llama_bin: Path, smol_gguf: Path, tmp_path: Path
) -> None:
    servers = [
        LlamaServer(llama_bin, smol_gguf, ctx=4096, parallel=2, log_path=tmp_path / f"s{i}.log")
        for i in range(2)
    ]
    try:
        for s in servers:
            s.wait_ready()
        ids = _pqal(tmp_path / "ori_pqal.json", 12)
        out = tmp_path / "run"
        env = llm_env(",".join(s.url for s in servers), tmp_path / "home", BIORAG_LLM_CACHE="false")
        proc = subprocess.Popen(
            _eval_cmd(tmp_path / "ori_pqal.json", out),
            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )  # fmt: skip
        _wait_for(out, 3, proc)
        servers[0].kill()
        stdout, stderr = proc.communicate(timeout=900)
        assert proc.returncode == 0, stderr[-3000:]
        preds = _predictions(out)
        assert sorted(p["question_id"] for p in preds) == sorted(ids)
        assert all(p.get("prediction") in LETTERS for p in preds)
        assert not any(p.get("error") for p in preds)
        metrics = json.loads(stdout)
        acc = metrics["methods"]["retrieve-read"]["accounting_total"]
        assert acc["total"]["failures"] == 0
        # Every answered request was answered once: the surviving server generated no more
        # tokens than biorag counted in total, and biorag counted each answer once.
        after = servers[1].settled_metrics()
        slack = 48 * acc["total"]["loops_stopped"]  # generated after a closed stream's last chunk
        assert 0 < after["tokens_predicted_total"] <= acc["total"]["completion_tokens"] + slack
        assert after["requests_processing"] == 0
    finally:
        for s in servers:
            s.stop()
