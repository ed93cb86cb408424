"""Loops stopped at their onset: watched requests are streamed and the stream is closed when the
model starts repeating itself (``llm.stop_loops``). Fault injection through the fake server;
the real llama-server's side (it stops generating) is in tests/real_llm."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tests.llm.conftest import completion

from biorag.llm import LLM, ChatRequest

FakeOpenAI = Any
SCHEMA = {
    "type": "object",
    "properties": {"claims": {"type": "array", "items": {"type": "string"}}},
    "required": ["claims"],
}
ITEM = '"Aspirin reduces fever in adults with influenza.",\n'


def _as_llama(fake: FakeOpenAI) -> None:
    fake.get_routes["/props"] = {
        "default_generation_settings": {"n_ctx": 4096},
        "total_slots": 1,
        "chat_template": "x",
    }
    fake.get_routes["/v1/models"] = {"data": [{"id": "tiny", "owned_by": "llamacpp"}]}
    fake.post_routes["/tokenize"] = lambda body: {"tokens": body["content"].split()}


def _sse(pieces: list[str], *, timings: bool, usage: bool = True) -> bytes:
    chunks: list[dict[str, Any]] = []
    for i, piece in enumerate(pieces, 1):
        chunk: dict[str, Any] = {"choices": [{"delta": {"content": piece}}]}
        if timings:
            chunk["timings"] = {"cache_n": 3, "prompt_n": 9, "predicted_n": i}
        chunks.append(chunk)
    chunks[-1]["choices"][0]["finish_reason"] = "length"
    if usage:
        chunks.append({"choices": [], "usage": {"prompt_tokens": 12, "completion_tokens": 999}})
    return ("".join(f"data: {json.dumps(c)}\n\n" for c in chunks) + "data: [DONE]\n\n").encode()


def _looping(n: int = 60) -> list[str]:
    return ['{"claims": [\n', '"Fever is common.",\n'] + [ITEM] * n


def req(**kw: Any) -> ChatRequest:
    kw.setdefault("max_tokens", 1500)
    return ChatRequest(messages=[{"role": "user", "content": "List the claims."}], **kw)


async def test_a_loop_closes_the_stream_and_keeps_what_came_before(
    fake_openai: FakeOpenAI, llm_for: Callable[..., LLM]
) -> None:
    _as_llama(fake_openai)
    fake_openai.default = lambda body: (200, {}, _sse(_looping(), timings=True), 0.0)
    llm = llm_for()
    r = await llm.chat(req(stage="claims", json_schema=SCHEMA))
    body = fake_openai.requests[-1]["body"]
    assert body["stream"] is True and body["timings_per_token"] is True
    assert r.finish_reason == "loop"
    # read until the check found the loop: far fewer than the 62 pieces sent, and the counts
    # are the server's own per-token timings at that point, not the final usage (never read)
    assert 6 <= r.completion_tokens < 20
    assert r.prompt_tokens == 12
    assert r.parsed == {
        "claims": ["Fever is common.", "Aspirin reduces fever in adults with influenza."]
    }
    assert r.repetition_cut and not r.tokens_estimated
    stage = llm.accounting.stage("claims")
    assert (stage.repetition_cuts, stage.loops_stopped, stage.parse_failures) == (1, 1, 0)
    assert len(fake_openai.requests) == 1  # a loop is not asked again under another form
    await llm.aclose()


async def test_an_answer_without_a_loop_is_read_whole_with_the_servers_usage(
    fake_openai: FakeOpenAI, llm_for: Callable[..., LLM]
) -> None:
    _as_llama(fake_openai)
    pieces = ['{"claims": [', '"Fever is common."', "]}"]
    fake_openai.default = lambda body: (200, {}, _sse(pieces, timings=True), 0.0)
    llm = llm_for()
    r = await llm.chat(req(stage="claims", json_schema=SCHEMA))
    assert r.parsed == {"claims": ["Fever is common."]}
    assert (r.prompt_tokens, r.completion_tokens) == (12, 999)  # the final usage chunk
    assert r.finish_reason == "length" and r.repetition_cut is None
    assert llm.accounting.stage("claims").loops_stopped == 0
    await llm.aclose()


async def test_a_server_without_counts_gets_estimated_ones(
    fake_openai: FakeOpenAI, llm_for: Callable[..., LLM]
) -> None:
    _as_llama(fake_openai)
    fake_openai.default = lambda body: (200, {}, _sse(_looping(), timings=False, usage=False), 0.0)
    llm = llm_for()
    r = await llm.chat(req(stage="claims", json_schema=SCHEMA))
    assert r.finish_reason == "loop" and r.tokens_estimated
    assert 6 <= r.completion_tokens < 20  # one per streamed piece read
    assert r.prompt_tokens > 0  # counted by the server's /tokenize
    await llm.aclose()


async def test_a_server_that_ignores_stream_is_read_as_a_whole_answer(
    fake_openai: FakeOpenAI, llm_for: Callable[..., LLM]
) -> None:
    _as_llama(fake_openai)
    text = '{"claims": ["Fever is common."]}'
    fake_openai.default = lambda body: (200, {}, completion(text, body), 0.0)
    llm = llm_for()
    r = await llm.chat(req(stage="claims", json_schema=SCHEMA))
    assert fake_openai.requests[-1]["body"]["stream"] is True
    assert r.parsed == {"claims": ["Fever is common."]} and r.completion_tokens == 4
    await llm.aclose()


async def test_off_short_answers_logprobs_and_unknown_servers_are_not_streamed(
    fake_openai: FakeOpenAI, llm_for: Callable[..., LLM]
) -> None:
    # an unknown server (no /props): not known to stop when the stream closes
    llm = llm_for()
    await llm.chat(req(stage="a"))
    await llm.aclose()
    _as_llama(fake_openai)
    off = llm_for(stop_loops="off")
    await off.chat(req(stage="b"))
    await off.aclose()
    llm = llm_for()
    await llm.chat(req(stage="c", max_tokens=8))
    await llm.chat(req(stage="d", logprobs=True, top_logprobs=2))
    await llm.aclose()
    assert all("stream" not in r["body"] for r in fake_openai.requests)
    # and "on" streams whatever the server is
    fake_openai.get_routes.clear()
    on = llm_for(stop_loops="on")
    fake_openai.default = lambda body: (200, {}, _sse(_looping(), timings=False), 0.0)
    r = await on.chat(req(stage="e"))
    assert fake_openai.requests[-1]["body"]["stream"] is True and r.finish_reason == "loop"
    assert "timings_per_token" not in fake_openai.requests[-1]["body"]
    await on.aclose()


async def test_an_empty_stream_is_retried_as_unreadable(
    fake_openai: FakeOpenAI, llm_for: Callable[..., LLM]
) -> None:
    _as_llama(fake_openai)
    fake_openai.script.append((200, {}, b"data: [DONE]\n\n", 0.0))
    fake_openai.default = lambda body: (200, {}, _sse(['{"claims": []}'], timings=True), 0.0)
    llm = llm_for()
    r = await llm.chat(req(stage="claims", json_schema=SCHEMA))
    assert r.parsed == {"claims": []}
    assert llm.accounting.stage("claims").attempt_errors == 1
    await llm.aclose()


async def test_vllm_is_watched_with_usage_in_every_chunk_and_llama_cpp_python_is_not(
    fake_openai: FakeOpenAI, llm_for: Callable[..., LLM], tmp_path: Path
) -> None:
    fake_openai.get_routes["/v1/models"] = {
        "data": [{"id": "tiny", "owned_by": "vllm", "max_model_len": 4096}]
    }
    fake_openai.default = lambda body: (200, {}, _sse(_looping(), timings=False), 0.0)
    vllm = llm_for()
    await vllm.chat(req(stage="a", json_schema=SCHEMA))
    await vllm.aclose()
    sent = fake_openai.requests[-1]["body"]
    assert sent["stream"] is True and sent["stream_options"]["continuous_usage_stats"] is True
    # llama-cpp-python stops when the stream closes but counts only at the end: not under auto
    fake_openai.get_routes["/v1/models"] = {"data": [{"id": "tiny", "owned_by": "me"}]}
    fake_openai.post_routes["/extras/tokenize/count"] = lambda body: {"count": 5}
    fake_openai.default = lambda body: (200, {}, completion('{"claims": []}', body), 0.0)
    for remembered in tmp_path.rglob("llm_servers.json"):  # another server at the same URL
        remembered.unlink()
    lcp = llm_for()
    await lcp.chat(req(stage="b", json_schema=SCHEMA))
    await lcp.aclose()
    sent = fake_openai.requests[-1]["body"]
    assert sent["response_format"]["type"] == "json_object"  # known as llama-cpp-python
    assert "stream" not in sent
