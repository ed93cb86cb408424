"""A llama-server with a 1,024-token window, ten long passages a question: every door (the
CLI's ``ask``, the Python API, ``biorag eval`` in the open setting, locally and on the Ray
workers, the service's ``/v1/ask`` and chat completions) fits the prompt (the lowest-ranked
passages dropped, and said) and answers. Before every door's client was composed
in one place, eval and the service sent the prompts as they were and lost every answer to
the server's refusal while ``ask`` answered (the fault-injected version, every door's chain:
tests/llm/test_llm_one_wiring.py)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from devkit.servers import LlamaServer, running
from tests.demo_data import write_pqal
from tests.real_llm.conftest import OPTIONS, biorag, demo_questions, llm_env
from tests.real_llm.test_eval_on_llama_servers import _predictions
from tests.serve.serving import start_serve, stop_serve

from biorag.api import BioRAG
from biorag.config import load_settings

pytestmark = pytest.mark.real_llm

WINDOW = 1024


@pytest.fixture(scope="module")
def small_llama(
    llama_bin: Path, smol_gguf: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[LlamaServer]:
    log = tmp_path_factory.mktemp("small_llama") / "server.log"
    yield from running(LlamaServer(llama_bin, smol_gguf, ctx=WINDOW, parallel=1, log_path=log))


def _eval_answers(env: dict[str, str], index: Path, tmp_path: Path, *extra: str) -> None:
    """``biorag eval`` in the open setting on two questions searched in ``index``: both
    answered, nothing refused by the server."""
    data = tmp_path / "ori_pqal.json"
    ids = write_pqal(data, 2)
    out = tmp_path / "run"
    r = biorag(["eval", "--dataset", "pubmedqa", "--data", str(data), "--setting", "open",
                "--index", str(index), "--methods", "retrieve-read", "--out", str(out),
                "--json", *extra], env)  # fmt: skip
    assert r["rc"] == 0, r["stderr"][-3000:]
    preds = _predictions(out)
    assert sorted(p["question_id"] for p in preds) == sorted(ids)
    assert not [p["error"] for p in preds if p.get("error")]
    assert all(p["prediction"] in OPTIONS or p["parse_failed"] for p in preds), preds
    assert "ContextOverflow" not in r["stderr"] and "exceed" not in r["stderr"]


def test_every_door_answers_at_a_small_window(
    small_llama: LlamaServer, demo_index: Path, tmp_path: Path
) -> None:
    env = llm_env(small_llama.url, tmp_path / "home", BIORAG_LLM_CACHE="false")
    q = demo_questions(1)[0]
    # the CLI
    r = biorag(["ask", "--index", str(demo_index), "--method", "retrieve-read", "--options",
                json.dumps(OPTIONS), "--json", q["question"]], env)  # fmt: skip
    assert r["rc"] == 0, r["stderr"][-3000:]
    assert r["json"]["answer"] in OPTIONS
    fits = r["json"]["details"]["context_fit"]
    assert any(f["dropped"] for f in fits), fits
    # the Python API
    settings = load_settings(None, environ=env)
    with BioRAG(demo_index, settings) as rag:
        ans = rag.ask(q["question"], OPTIONS)
    assert ans.answer in OPTIONS or ans.parse_failed
    assert any(f.dropped for f in ans.details.context_fit), ans.details.context_fit
    # eval, open setting
    _eval_answers(env, demo_index, tmp_path)
    # the service
    proc, base = start_serve(["--index", str(demo_index)], env, tmp_path / "serve.log")
    try:
        resp = httpx.post(f"{base}/v1/ask", timeout=600,
                          json={"question": q["question"], "options": q["options"]})  # fmt: skip
        assert resp.status_code == 200, resp.text
        ans = resp.json()
        assert ans["answer"] in q["options"] or ans["parse_failed"], ans
        fits = ans["details"]["context_fit"]  # the service keeps the answer's details nested
        assert any(f["dropped"] for f in fits), fits
        chat = httpx.post(
            f"{base}/v1/chat/completions",
            timeout=600,
            json={
                "model": "retrieve-read",
                "messages": [{"role": "user", "content": q["question"]}],
            },
        )
        assert chat.status_code == 200, chat.text
        assert chat.json()["choices"][0]["message"]["content"].strip()
    finally:
        assert stop_serve(proc) == 0, (tmp_path / "serve.log").read_text()[-3000:]


def test_eval_on_ray_workers_answers_at_a_small_window(
    small_llama: LlamaServer, demo_index: Path, ray_cluster: Any, tmp_path: Path
) -> None:
    """The workers build their clients from the settings: the same fit as every other door."""
    env = llm_env(small_llama.url, tmp_path / "home", BIORAG_LLM_CACHE="false")
    _eval_answers(env, demo_index, tmp_path, "--executor", "ray", "--ray-address",
                  ray_cluster.address)  # fmt: skip
