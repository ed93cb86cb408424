"""How the OpenAI backend meets real servers' ways: kinds, structured-output refusals, unreadable
bodies, context windows, several endpoints. Fault injection through the fake server on
127.0.0.1 (the real llama-server runs in tests/real_llm)."""

from __future__ import annotations

import itertools
import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest
from tests.llm.conftest import completion

from biorag.config import Settings
from biorag.errors import LLMError
from biorag.llm import LLM, ChatRequest, build_llm
from biorag.llm.context import ContextTooSmallError, collect_fits, drop_last_passage
from biorag.llm.endpoints import EndpointPool
from biorag.llm.evidence import format_passages
from biorag.llm.openai.backend import OpenAIBackend
from biorag.llm.openai.server_info import ServerRegistry

FakeOpenAI = Any
SCHEMA = {"title": "Verdict", "type": "object", "required": ["answer"]}
LLAMA_PROPS = {
    "default_generation_settings": {"n_ctx": 512},
    "total_slots": 1,
    "chat_template": "{{ messages }}",
}


def req(text: str = "Does aspirin reduce fever?", **kw: Any) -> ChatRequest:
    return ChatRequest(messages=[{"role": "user", "content": text}], **kw)


def _as_llama(fake: FakeOpenAI, n_ctx: int = 512) -> None:
    fake.get_routes["/props"] = {**LLAMA_PROPS, "default_generation_settings": {"n_ctx": n_ctx}}
    fake.get_routes["/v1/models"] = {"data": [{"id": "tiny", "owned_by": "llamacpp"}]}
    # One token per whitespace word: exact, so the fitting arithmetic can be checked.
    fake.post_routes["/tokenize"] = lambda body: {"tokens": body["content"].split()}


async def test_llama_cpp_gets_its_native_schema_field(
    fake_openai: FakeOpenAI, llm_for: Callable[..., LLM], tmp_path: Path
) -> None:
    _as_llama(fake_openai)
    fake_openai.default = lambda body: (200, {}, completion('{"answer": "yes"}', body), 0.0)
    llm = llm_for()
    r = await llm.chat(req(json_schema=SCHEMA))
    assert r.parsed == {"answer": "yes"}
    body = fake_openai.requests[0]["body"]
    assert body["json_schema"] == SCHEMA and "response_format" not in body
    remembered = json.loads((tmp_path / "home" / "llm_servers.json").read_text())
    (entry,) = remembered.values()
    assert entry["kind"] == "llama.cpp" and entry["form"] == "native"
    await llm.aclose()


async def test_a_500_naming_the_format_falls_back_instead_of_being_retried(
    fake_openai: FakeOpenAI, llm_for: Callable[..., LLM]
) -> None:
    # llama-cpp-python's server: HTTP 500 for a schema it cannot turn into a grammar.
    def answer(body: dict[str, Any]) -> Any:
        if (body.get("response_format") or {}).get("type") == "json_schema":
            return 500, {}, {"error": {"message": "Failed to convert json_schema to grammar"}}, 0
        return 200, {}, completion('{"answer": "no"}', body), 0.0

    fake_openai.default = answer
    llm = llm_for(max_retries=4)
    r = await llm.chat(req(json_schema=SCHEMA))
    assert r.parsed == {"answer": "no"}
    kinds = [q["body"]["response_format"]["type"] for q in fake_openai.requests]
    assert kinds == ["json_schema", "json_object"]
    assert llm.accounting.total().attempt_errors == 0
    await llm.aclose()


async def test_a_constrained_answer_that_does_not_parse_is_asked_once_more_a_form_down(
    fake_openai: FakeOpenAI, llm_for: Callable[..., LLM]
) -> None:
    fake_openai.script.append(lambda body: (200, {}, completion("sure thing", body), 0.0))
    fake_openai.default = lambda body: (200, {}, completion('{"answer": "maybe"}', body), 0.0)
    llm = llm_for()
    r = await llm.chat(req(json_schema=SCHEMA))
    assert r.parsed == {"answer": "maybe"}
    assert [q["body"]["response_format"]["type"] for q in fake_openai.requests] == [
        "json_schema",
        "json_object",
    ]
    # Tokens of both calls are counted (equal to what the server reported in total).
    assert r.prompt_tokens == 14
    await llm.aclose()


@pytest.mark.parametrize(
    "payload, match",
    [
        (b"<!DOCTYPE html><html><body>Welcome</body></html>", "web page"),
        (b"this is not json", "unreadable chat completion"),
        ({"choices": []}, "unreadable chat completion"),
    ],
)
async def test_unreadable_200_bodies_are_retried_then_fail_clearly(
    fake_openai: FakeOpenAI, llm_for: Callable[..., LLM], payload: Any, match: str
) -> None:
    fake_openai.default = lambda body: (200, {}, payload, 0.0)
    llm = llm_for(max_retries=2)
    with pytest.raises(LLMError, match=match) as info:
        await llm.chat(req())
    assert "failed after 3 tries" in str(info.value)
    assert len(fake_openai.requests) == 3
    await llm.aclose()


async def test_one_unreadable_body_then_a_good_one_is_answered(
    fake_openai: FakeOpenAI, llm_for: Callable[..., LLM]
) -> None:
    fake_openai.script.append((200, {}, b"garbage", 0.0))
    llm = llm_for()
    assert (await llm.chat(req())).text == "Yes it does"
    await llm.aclose()


async def test_unknown_model_and_context_overflow_are_not_retried(
    fake_openai: FakeOpenAI, llm_for: Callable[..., LLM]
) -> None:
    fake_openai.default = lambda body: (
        404,
        {},
        {"error": {"message": "The model `nope` does not exist"}},
        0.0,
    )
    llm = llm_for(max_retries=3)
    with pytest.raises(LLMError, match=r"fix llm\.model"):
        await llm.chat(req())
    assert len(fake_openai.requests) == 1
    fake_openai.default = lambda body: (
        500,
        {},
        {"error": {"message": "Context size has been exceeded."}},
        0.0,
    )
    with pytest.raises(LLMError, match="context window"):
        await llm.chat(req("again"))
    assert len(fake_openai.requests) == 2
    await llm.aclose()


async def test_an_unreachable_server_names_the_setting(
    make_settings: Callable[..., Settings],
) -> None:
    llm = build_llm(
        make_settings(backend="openai", base_url="http://127.0.0.1:9/v1", model="m", max_retries=1),
        retry_base_delay=0.01,
    )
    assert llm is not None
    with pytest.raises(
        LLMError, match=re.escape("cannot connect to llm.base_url http://127.0.0.1:9/v1")
    ):
        await llm.chat(req())
    await llm.aclose()


def _passages(n: int, words: int = 40) -> str:
    return format_passages((f"d{i}", " ".join([f"w{i}"] * words)) for i in range(n))


async def test_prompts_are_fitted_to_the_window_by_dropping_the_last_passages(
    fake_openai: FakeOpenAI, llm_for: Callable[..., LLM]
) -> None:
    _as_llama(fake_openai, n_ctx=300)
    llm = llm_for(max_tokens=200)
    prompt = "Question: does it work?\n\n" + _passages(10)
    with collect_fits() as fits:
        await llm.chat(req(prompt))
    sent = fake_openai.requests[0]["body"]
    content = sent["messages"][0]["content"]
    kept = [f"d{i}" for i in range(10) if f'id="d{i}"' in content]
    assert kept and kept == [f"d{i}" for i in range(len(kept))]  # best-ranked kept, in order
    (fit,) = fits
    assert fit["dropped"] == [f"d{i}" for i in range(len(kept), 10)][::-1]
    n_prompt = len(content.split()) + 8
    assert n_prompt + sent["max_tokens"] <= 300  # never over the window
    assert sent["max_tokens"] >= 64
    await llm.aclose()


async def test_one_passage_too_long_loses_its_last_sentences_not_the_prompt(
    fake_openai: FakeOpenAI, llm_for: Callable[..., LLM]
) -> None:
    """A fixed prompt around one long passage (CLAIMS' triple prompt at a 1,024 window): the
    passage is cut at sentence boundaries, its first sentence kept, and the cut is recorded."""
    _as_llama(fake_openai, n_ctx=300)
    llm = llm_for(max_tokens=64)
    sentences = [f"Sentence {i} says " + " ".join([f"w{i}"] * 30) + "." for i in range(8)]
    prompt = "Question: does it work?\n\n" + format_passages([("d0", " ".join(sentences))])
    with collect_fits() as fits:
        await llm.chat(req(prompt))
    content = fake_openai.requests[0]["body"]["messages"][0]["content"]
    assert sentences[0] in content and sentences[-1] not in content
    assert 'id="d0"' in content and content.rstrip().endswith("</passage>")
    (fit,) = fits
    assert fit["trimmed"] == ["d0"] and fit["dropped"] == []
    assert len(content.split()) + 8 + fit["max_tokens"] <= 300
    await llm.aclose()


async def test_a_window_too_small_for_one_passage_is_a_clear_error(
    fake_openai: FakeOpenAI, llm_for: Callable[..., LLM]
) -> None:
    _as_llama(fake_openai, n_ctx=128)
    llm = llm_for()
    with pytest.raises(ContextTooSmallError, match="too small for even one passage"):
        await llm.chat(req("Q?\n\n" + _passages(2, words=200)))
    assert fake_openai.requests == []
    await llm.aclose()


async def test_configured_window_without_a_tokenizer_uses_the_estimate(
    fake_openai: FakeOpenAI, llm_for: Callable[..., LLM]
) -> None:
    llm = llm_for(context_window=400, max_tokens=100)
    await llm.chat(req("Q?\n\n" + _passages(10)))
    body = fake_openai.requests[0]["body"]
    content = body["messages"][0]["content"]
    assert 'id="d9"' not in content and 'id="d0"' in content
    assert len(content) / 2.5 + 8 + body["max_tokens"] <= 400  # the over-estimate fits
    await llm.aclose()


def test_drop_last_passage_without_blocks_changes_nothing() -> None:
    msgs = [{"role": "user", "content": "no passages"}]
    assert drop_last_passage(msgs) == (msgs, None, 0)


class _Down:
    name, model = "openai", "m"

    def __init__(self) -> None:
        self.calls = 0
        self.base_url = "http://down"

    async def chat(self, req: ChatRequest) -> Any:
        from biorag.llm.base import RetryableLLMError

        self.calls += 1
        raise RetryableLLMError("connection refused")


async def test_a_pool_fails_over_and_rests_the_dead_endpoint(
    fake_openai: FakeOpenAI,
) -> None:
    down = _Down()
    up = OpenAIBackend(fake_openai.url, "tiny", registry=ServerRegistry(None))
    pool = EndpointPool([down, up], per_endpoint=2, rest_s=60)
    llm = LLM(pool, max_retries=0)
    answers = await llm.chat_many([req(f"q{i}") for i in range(6)])
    assert all(a.text == "Yes it does" for a in answers)
    assert down.calls == 1  # tried once, then rested
    assert len(fake_openai.requests) == 6  # each question answered exactly once
    assert pool.stats()[1]["answered"] == 6
    await llm.aclose()


def test_base_url_lists_and_bad_urls(make_settings: Callable[..., Settings]) -> None:
    s = make_settings(backend="openai", base_url="http://a/v1, http://b/v1", model="m")
    assert s.llm.base_urls() == ["http://a/v1", "http://b/v1"]
    llm = build_llm(s)
    assert llm is not None and isinstance(llm.backend, EndpointPool)
    llm.close()
    with pytest.raises(ValueError, match="must start with http"):
        make_settings(backend="openai", base_url="localhost:8080", model="m")


def test_httpx_is_the_transport() -> None:
    assert httpx.Timeout(5.0).connect == 5.0


async def test_the_answer_stage_streams_when_asked(
    fake_openai: FakeOpenAI, llm_for: Callable[..., LLM]
) -> None:
    from biorag.llm.stream_sink import stream_answers_to

    def sse(body: dict[str, Any]) -> Any:
        assert body["stream"] is True
        chunks = [
            {"choices": [{"delta": {"content": "Yes, "}}]},
            {"choices": [{"delta": {"content": "it does."}, "finish_reason": "stop"}]},
            {"choices": [], "usage": {"prompt_tokens": 5, "completion_tokens": 4}},
        ]
        text = "".join(f"data: {json.dumps(c)}\n\n" for c in chunks) + "data: [DONE]\n\n"
        return 200, {}, text.encode(), 0.0

    fake_openai.default = sse
    llm = llm_for()
    pieces: list[str] = []
    with stream_answers_to(pieces.append):
        r = await llm.chat(req(stage="answer"))
    assert pieces == ["Yes, ", "it does."] and r.text == "Yes, it does."
    assert (r.prompt_tokens, r.completion_tokens) == (5, 4)
    assert llm.accounting.stage("answer").completion_tokens == 4
    await llm.aclose()


def test_a_build_against_a_dead_server_stops_with_one_line(tmp_path: Path) -> None:
    """Operators fall back per item when one request fails, but not when there is no model at
    all: ``strata build`` against nothing listening ends with exit 2 and one line."""
    import os
    import subprocess
    import sys

    papers = tmp_path / "papers.jsonl"
    papers.write_text(json.dumps({"pid": "1", "title": "T", "abstract": "Aspirin helps."}) + "\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith("BIORAG_")}
    env.update(
        BIORAG_HOME=str(tmp_path / "home"),
        BIORAG_LLM_BACKEND="openai",
        BIORAG_LLM_BASE_URL="http://127.0.0.1:9/v1",
        BIORAG_LLM_MODEL="m",
        BIORAG_LLM_MAX_RETRIES="1",
        BIORAG_PROGRESS="0",
    )
    r = subprocess.run(
        [sys.executable, "-m", "biorag.cli.main", "strata", "build", "--papers", str(papers),
         "--out", str(tmp_path / "kg")],
        env=env, capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert r.returncode == 2, r.stderr[-2000:]
    last = r.stderr.strip().splitlines()[-1]
    assert "llm.base_url" in last and "Traceback" not in r.stderr


async def test_a_letter_is_read_from_free_text_when_the_extraction_is_not_json(
    make_settings: Callable[..., Settings],
) -> None:
    from biorag.answer.reader import read_multiple_choice
    from biorag.llm.mock_backend import MockBackend

    def respond(req: ChatRequest) -> str:
        if req.stage == "answer_extract":
            return "I think the answer is B."  # no JSON: a server without constrained decoding
        return "The passages show it does not work, so: B. no"

    llm = LLM(MockBackend(responder=respond, model="m"))
    res = await read_multiple_choice(
        llm, "Does it work?", {"A": "yes", "B": "no", "C": "maybe"}, ["It does not work."]
    )
    assert (res.answer, res.parse_failed) == ("B", False)
    stage = llm.accounting.stage("answer_extract")
    assert stage.parse_failures == 1 and stage.fallbacks == 1


async def test_budget_scale_multiplies_operator_budgets(
    fake_openai: FakeOpenAI, llm_for: Callable[..., LLM]
) -> None:
    llm = llm_for(budget_scale=4.0, max_tokens=100)
    await llm.chat(req(max_tokens=16))  # an operator's budget
    await llm.chat(req("no budget"))  # the configured default is not scaled
    assert [q["body"]["max_tokens"] for q in fake_openai.requests] == [64, 100]
    await llm.aclose()


async def test_requests_beyond_the_servers_slots_wait_on_our_side(
    fake_openai: FakeOpenAI, llm_for: Callable[..., LLM]
) -> None:
    """llama.cpp reports its slots; more requests in flight would queue inside the server while
    their read timeout runs, so biorag holds them back itself."""
    import time as _time

    _as_llama(fake_openai)  # total_slots: 1
    starts: list[float] = []

    def slow(body: dict[str, Any]) -> Any:
        starts.append(_time.perf_counter())
        return 200, {}, completion("ok", body), 0.1  # the delay runs outside the server's lock

    fake_openai.default = slow
    llm = llm_for(concurrency=8)
    await llm.chat_many([req(f"q{i}") for i in range(5)])
    gaps = [b - a for a, b in itertools.pairwise(starts)]
    assert len(starts) == 5 and min(gaps) >= 0.09  # one at a time
    await llm.aclose()
