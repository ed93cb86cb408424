"""The OpenAI-compatible backend against a real HTTP server on 127.0.0.1."""

from __future__ import annotations

import logging
import sqlite3
import time
from collections.abc import Callable
from typing import Any

import pytest

from biorag.config import Settings
from biorag.errors import LLMError
from biorag.llm import LLM, ChatRequest, build_llm, yes_no_probability
from biorag.llm.openai.backend import OpenAIBackend
from biorag.llm.openai.errors import retry_after as _retry_after

FakeOpenAI = Any  # the fake_openai fixture (tests/llm/conftest.py)

KEY_ENV = "BIORAG_TEST_LLM_KEY"
SECRET = "sk-test-DO-NOT-LEAK-8f3a"
SCHEMA = {"title": "Verdict", "type": "object", "required": ["answer"]}


def req(text: str = "Does aspirin reduce fever?", **kw: Any) -> ChatRequest:
    return ChatRequest(messages=[{"role": "user", "content": text}], **kw)


@pytest.fixture
def openai_llm(
    fake_openai: FakeOpenAI, make_settings: Callable[..., Settings]
) -> Callable[..., LLM]:
    def make(**kw: Any) -> LLM:
        fields = {
            "backend": "openai",
            "base_url": fake_openai.url,
            "model": "tiny-chat",
            "api_key_env": KEY_ENV,
            "max_retries": 0,
            **kw,
        }
        llm = build_llm(make_settings(**fields), retry_base_delay=0.01)
        assert llm is not None
        return llm

    return make


async def test_answer_usage_logprobs_auth_and_no_key_leak(
    fake_openai: FakeOpenAI,
    openai_llm: Callable[..., LLM],
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    monkeypatch.setenv(KEY_ENV, SECRET)
    caplog.set_level(logging.DEBUG)
    llm = openai_llm()
    r = await llm.chat(req(stage="judge", logprobs=True, top_logprobs=2, stop=["\n"]))
    assert r.text == "Yes it does" and r.backend == "openai" and r.model == "tiny-chat"
    assert (r.prompt_tokens, r.completion_tokens) == (7, 3)
    assert r.logprobs is not None and [t.token for t in r.logprobs] == ["Yes", "it", "does"]
    assert r.logprobs[0].top == {"Yes": -0.1, "No": -2.5}
    assert yes_no_probability(r) == pytest.approx(0.9168, abs=1e-3)
    seen = fake_openai.requests[0]
    assert seen["path"] == "/v1/chat/completions"
    assert seen["headers"]["Authorization"] == f"Bearer {SECRET}"
    body = seen["body"]
    assert body["model"] == "tiny-chat" and body["logprobs"] is True and body["top_logprobs"] == 2
    assert body["max_tokens"] == 512 and body["temperature"] == 0.0 and body["stop"] == ["\n"]
    again = await llm.chat(req(stage="judge", logprobs=True, top_logprobs=2, stop=["\n"]))
    assert again.cache_hit and again.logprobs == r.logprobs
    assert len(fake_openai.requests) == 1
    judge = llm.accounting.stage("judge")
    assert (judge.calls, judge.cache_hits, judge.prompt_tokens, judge.completion_tokens) == (
        2,
        1,
        7,
        3,
    )
    # The key is nowhere but the header.
    assert llm.cache is not None
    with sqlite3.connect(llm.cache.path) as conn:
        rows = conn.execute("SELECT * FROM llm_cache").fetchall()
    assert rows and SECRET not in repr(rows)
    assert SECRET not in repr(llm) and SECRET not in repr(llm.backend)
    assert SECRET not in repr(vars(llm.backend)) and SECRET not in str(llm.accounting.report())
    for rec in caplog.records:
        assert SECRET not in rec.getMessage()
    await llm.aclose()


async def test_no_authorization_header_without_the_env_var(
    fake_openai: FakeOpenAI, openai_llm: Callable[..., LLM], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(KEY_ENV, raising=False)
    llm = openai_llm(cache=False)
    await llm.chat(req())
    assert "Authorization" not in fake_openai.requests[0]["headers"]
    await llm.aclose()


async def test_retry_rides_out_429_and_500(
    fake_openai: FakeOpenAI, openai_llm: Callable[..., LLM]
) -> None:
    busy = {"error": {"message": "rate limited"}}
    fake_openai.script.extend(
        [
            (429, {"Retry-After": "0"}, busy, 0.0),
            (500, {}, {"error": {"message": "internal"}}, 0.0),
            (429, {"Retry-After": "0"}, busy, 0.0),
            (503, {}, "unavailable", 0.0),
        ]
    )
    llm = openai_llm(max_retries=4, cache=False)
    r = await llm.chat(req(stage="gen"))
    assert r.text == "Yes it does"
    assert len(fake_openai.requests) == 5
    s = llm.accounting.stage("gen")
    assert (s.calls, s.attempt_errors, s.failures) == (1, 4, 0)
    await llm.aclose()


async def test_gives_up_after_max_retries(
    fake_openai: FakeOpenAI, openai_llm: Callable[..., LLM]
) -> None:
    fake_openai.default = lambda body: (502, {}, {"error": {"message": "bad gateway"}}, 0.0)
    llm = openai_llm(max_retries=2, cache=False)
    with pytest.raises(LLMError, match=r"failed after 3 tries: .*HTTP 502: bad gateway"):
        await llm.chat(req())
    assert len(fake_openai.requests) == 3
    await llm.aclose()


async def test_timeout_fails_after_retries(
    fake_openai: FakeOpenAI, openai_llm: Callable[..., LLM]
) -> None:
    fake_openai.default = lambda body: (200, {}, fake_openai.completion("late", body), 1.0)
    # A read timeout is retried once only, whatever max_retries says (a silent server must not
    # hold a run for many timeouts); the read timeout here does not grow with max_tokens.
    llm = openai_llm(timeout_s=0.2, timeout_per_token_s=0.0, max_retries=3, cache=True)
    start = time.perf_counter()
    with pytest.raises(LLMError, match=r"failed after 2 tries: .*gave no answer within"):
        await llm.chat(req(stage="slow"))
    assert time.perf_counter() - start < 1.5
    assert len(fake_openai.requests) == 2
    assert llm.cache is not None and len(llm.cache) == 0
    assert llm.accounting.stage("slow").failures == 1
    await llm.aclose()


async def test_other_4xx_is_an_error_with_the_server_message(
    fake_openai: FakeOpenAI, openai_llm: Callable[..., LLM]
) -> None:
    fake_openai.default = lambda body: (401, {}, {"error": {"message": "invalid api key"}}, 0.0)
    llm = openai_llm(max_retries=3, cache=False)
    with pytest.raises(LLMError, match="HTTP 401: invalid api key") as info:
        await llm.chat(req())
    assert "tries" not in str(info.value)
    assert len(fake_openai.requests) == 1
    await llm.aclose()


def _reject(fake: FakeOpenAI, kinds: tuple[str, ...]) -> Callable[[dict[str, Any]], Any]:
    def answer(body: dict[str, Any]) -> Any:
        kind = (body.get("response_format") or {}).get("type")
        if kind in kinds:
            return 400, {}, {"error": {"message": f"response_format {kind} is not supported"}}, 0.0
        return 200, {}, fake.completion('Here: {"answer": "yes"}', body), 0.0

    return answer


async def test_response_format_falls_back_to_json_object_and_remembers(
    fake_openai: FakeOpenAI, openai_llm: Callable[..., LLM]
) -> None:
    fake_openai.default = _reject(fake_openai, ("json_schema",))
    llm = openai_llm(cache=False)
    r = await llm.chat(req(json_schema=SCHEMA))
    assert r.parsed == {"answer": "yes"} and r.parse_error is None
    first, second = (q["body"] for q in fake_openai.requests)
    assert first["response_format"]["type"] == "json_schema"
    assert first["response_format"]["json_schema"]["schema"] == SCHEMA
    assert first["response_format"]["json_schema"]["name"] == "Verdict"
    # json_object with the schema (llama.cpp and others constrain decoding to it) and the
    # schema in the prompt too.
    assert second["response_format"] == {"type": "json_object", "schema": SCHEMA}
    assert "JSON Schema" in second["messages"][-1]["content"]
    await llm.chat(req("another question", json_schema=SCHEMA))
    assert len(fake_openai.requests) == 3
    assert fake_openai.requests[2]["body"]["response_format"]["type"] == "json_object"
    await llm.aclose()


async def test_response_format_falls_back_to_prompt_only(
    fake_openai: FakeOpenAI, openai_llm: Callable[..., LLM]
) -> None:
    fake_openai.default = _reject(fake_openai, ("json_schema", "json_object"))
    llm = openai_llm(cache=False)
    r = await llm.chat(req(json_schema=SCHEMA))
    assert r.parsed == {"answer": "yes"}
    assert len(fake_openai.requests) == 4  # json_schema, json_object + schema, json_object, none
    last = fake_openai.requests[3]["body"]
    assert "response_format" not in last and "JSON Schema" in last["messages"][-1]["content"]
    assert isinstance(llm.backend, OpenAIBackend) and llm.backend.format_mode == "none"
    # Explicit json_schema mode does not fall back.
    strict = openai_llm(cache=False, structured_output="json_schema")
    with pytest.raises(LLMError, match="refused structured output 'json_schema'"):
        await strict.chat(req(json_schema=SCHEMA))
    await llm.aclose()
    await strict.aclose()


def test_chat_sync_reuses_one_client(
    fake_openai: FakeOpenAI, openai_llm: Callable[..., LLM]
) -> None:
    with openai_llm(cache=False) as llm:
        assert llm.chat_sync(req("one")).text == "Yes it does"
        assert [r.text for r in llm.chat_many_sync([req("two"), req("three")])] == [
            "Yes it does"
        ] * 2
    assert len(fake_openai.requests) == 3


def test_retry_after_header_forms() -> None:
    assert _retry_after("3") == 3.0
    assert _retry_after(None) is None and _retry_after("soon") is None
    assert _retry_after("Wed, 21 Oct 2015 07:28:00 GMT") == 0.0


async def test_a_reasoning_models_thinking_is_kept_apart_from_the_answer(
    fake_openai: FakeOpenAI, openai_llm: Callable[..., LLM]
) -> None:
    from tests.llm.conftest import completion

    def think(body: dict[str, Any]) -> Any:
        text = '<think>\nThe passages say B, not A.\n</think>\n\n{"answer": "B"}'
        return (200, {}, completion(text, body), 0.0)

    def server_parsed(body: dict[str, Any]) -> Any:
        payload = completion("No.", body)
        payload["choices"][0]["message"]["reasoning_content"] = "Thinking it over."
        return (200, {}, payload, 0.0)

    fake_openai.script.extend([think, server_parsed])
    llm = openai_llm(cache=True)
    r = await llm.chat(req(json_schema=SCHEMA, stage="final"))
    assert r.text == '{"answer": "B"}' and r.parsed == {"answer": "B"}
    assert r.reasoning == "The passages say B, not A."
    again = await llm.chat(req(json_schema=SCHEMA, stage="final"))  # from the cache
    assert again.cache_hit and again.text == r.text and again.reasoning == r.reasoning
    plain = await llm.chat(req("Is it safe?"))
    assert plain.text == "No." and plain.reasoning == "Thinking it over."
    await llm.aclose()


async def test_a_key_the_server_echoes_back_is_kept_out_of_the_error(
    fake_openai: FakeOpenAI, openai_llm: Callable[..., LLM], monkeypatch: pytest.MonkeyPatch
) -> None:
    # fault injection: OpenAI-style servers quote the key they refused in the error body
    canary = "sk-canary-0123456789abcdef"
    monkeypatch.setenv(KEY_ENV, canary)
    fake_openai.default = lambda body: (
        401,
        {},
        {"error": {"message": f"Incorrect API key provided: {canary}."}},
        0.0,
    )
    llm = openai_llm(cache=False)
    with pytest.raises(LLMError) as info:
        await llm.chat(req())
    assert canary not in str(info.value) and "Incorrect API key provided: ***" in str(info.value)
    assert fake_openai.requests[0]["headers"]["Authorization"] == f"Bearer {canary}"  # it was sent
    fake_openai.default = lambda body: (200, {}, f"<p>not json {canary}</p>", 0.0)
    with pytest.raises(LLMError) as info:
        await llm.chat(req())
    assert canary not in str(info.value)
    await llm.aclose()
