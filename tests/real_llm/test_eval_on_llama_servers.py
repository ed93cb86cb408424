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
from devkit.servers import LlamaServer
from tests.demo_data import write_pqal
from tests.real_llm.conftest import llm_env

pytestmark = pytest.mark.real_llm

LETTERS = {"A": "yes", "B": "no", "C": "maybe"}


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
    ids = write_pqal(tmp_path / "ori_pqal.json", 10)
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
        ids = write_pqal(tmp_path / "ori_pqal.json", 8)
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


def test_eval_answered_by_ray_workers_against_the_server(
    llama: LlamaServer, ray_cluster: Any, tmp_path: Path
) -> None:
    """The workers build their LLM client from the settings and ask the real server: every
    question answered once, by both workers, and the tokens they counted are the server's."""
    ids = write_pqal(tmp_path / "ori_pqal.json", 6)
    out = tmp_path / "run"
    # a question a batch: six batches, so the second actor gets some while the first answers
    env = llm_env(llama.url, tmp_path / "home", BIORAG_LLM_CACHE="false",
                  BIORAG_EXECUTOR_BATCH_SIZE="1")  # fmt: skip
    before = llama.settled_metrics()
    cmd = [*_eval_cmd(tmp_path / "ori_pqal.json", out), "--executor", "ray",
           "--ray-address", ray_cluster.address]  # fmt: skip
    r = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=900, check=False)
    assert r.returncode == 0, r.stderr[-3000:]
    assert "answered on ray: 2 workers" in r.stderr
    preds = _predictions(out)
    assert sorted(p["question_id"] for p in preds) == sorted(ids)
    assert all(p.get("prediction") in LETTERS and not p.get("error") for p in preds), preds
    acc = json.loads(r.stdout)["methods"]["retrieve-read"]["accounting_total"]["total"]
    generated = llama.settled_metrics()["tokens_predicted_total"] - before["tokens_predicted_total"]
    slack = 48 * acc["loops_stopped"]  # generated after a closed stream's last chunk
    assert acc["calls"] >= len(ids) and acc["failures"] == 0
    assert acc["completion_tokens"] <= generated <= acc["completion_tokens"] + slack
