"""``biorag serve`` in front of a real model: llama-server with SmolLM2-135M, the real MiniLM
index, HTTP on loopback. Proves the service's LLM path end to end (the in-process API tests
run without a model; their dead-server case is fault injection)."""

from __future__ import annotations

import httpx
import pytest
from tests.real_llm.conftest import demo_questions, llm_env
from tests.serve.serving import start_serve, stop_serve

pytest.importorskip("uvicorn")


def test_ask_and_chat_through_the_service_with_a_real_model(llama, demo_index, tmp_path):
    env = llm_env(llama.url, tmp_path / "home", BIORAG_RETRIEVAL_K="3")  # three long passages
    log_path = tmp_path / "serve.log"
    proc, base = start_serve(["--index", str(demo_index)], env, log_path)
    try:
        q = demo_questions(1)[0]
        r = httpx.post(f"{base}/v1/ask", timeout=600,
                       json={"question": q["question"], "options": q["options"]})  # fmt: skip
        assert r.status_code == 200, r.text
        ans = r.json()
        assert ans["llm_used"] and ans["method"] == "retrieve-read" and ans["evidence"]
        assert ans["accounting"]["total"]["calls"] >= 1
        assert ans["answer"] in q["options"] or ans["parse_failed"]
        chat = httpx.post(f"{base}/v1/chat/completions", timeout=600, json={
            "model": "retrieve-read",
            "messages": [{"role": "user", "content": q["question"]}]})  # fmt: skip
        assert chat.status_code == 200, chat.text
        body = chat.json()
        assert body["choices"][0]["message"]["content"].strip() and body["evidence"]
        assert body["usage"]["completion_tokens"] > 0
        # streamed: the steps, then the model's answer piece by piece as llama-server writes it
        events = []
        with httpx.stream(
            "POST",
            f"{base}/v1/ask",
            timeout=600,
            # another question than the chat's: a cached answer comes whole, not streamed
            json={
                "question": "What is the diagnostic value of CRP in elderly patients?",
                "method": "retrieve-read",
                "stream": True,
            },
        ) as s:
            for block in s.iter_text():
                events.append(block)
        text = "".join(events)
        assert "event: stage" in text and '"stage": "answer", "status": "finished"' in text
        tokens = text.count("event: token")
        assert tokens > 1, text[-1500:]  # the answer came in pieces, not whole
        assert text.rstrip().rsplit("event: ", 1)[1].startswith("result")
    finally:
        code = stop_serve(proc)
    assert code == 0, log_path.read_text()
