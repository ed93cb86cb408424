"""Mock backend scripting, the SQLite cache, retries, the concurrency limit and accounting."""

from __future__ import annotations

import asyncio
import json
import sqlite3
from collections.abc import Callable
from pathlib import Path

import pytest

from biorag.config import Settings
from biorag.errors import ConfigError, LLMError
from biorag.llm import (
    LLM,
    Accounting,
    ChatRequest,
    ChatResponse,
    MockBackend,
    SQLiteCache,
    build_llm,
    yes_no_probability,
)

SCHEMA = {"type": "object", "required": ["answer"]}


def req(text: str, **kw: object) -> ChatRequest:
    return ChatRequest(messages=[{"role": "user", "content": text}], **kw)  # type: ignore[arg-type]


def mock_llm(tmp_path: Path, rules: list[dict], **kw: object) -> tuple[LLM, MockBackend]:
    backend = MockBackend(rules=rules)
    cache = SQLiteCache(tmp_path / "cache.sqlite") if kw.pop("cache", True) else None
    return LLM(backend, cache=cache, retry_base_delay=0.0, **kw), backend  # type: ignore[arg-type]


async def test_rules_match_stage_and_once(tmp_path: Path) -> None:
    llm, _ = mock_llm(
        tmp_path,
        [
            {
                "match": "aspirin",
                "stage": "judge",
                "response": "Yes",
                "logprobs": {"Yes": -0.2, "No": -1.9},
            },
            {"match": "aspirin", "response": {"answer": "from json"}},
            {"stage": "extract", "response": "not json at all", "once": True},
            {"stage": "extract", "response": '```json\n{"answer": "ok"}\n```'},
        ],
        cache=False,
    )
    r = await llm.chat(req("does aspirin work?", stage="judge", logprobs=True, top_logprobs=2))
    assert r.text == "Yes" and r.backend == "mock"
    assert yes_no_probability(r) == pytest.approx(1 / (1 + 2.718281828 ** (-1.7)), rel=1e-6)
    r = await llm.chat(req("aspirin?"))
    assert json.loads(r.text) == {"answer": "from json"}
    bad = await llm.chat(req("extract things", stage="extract", json_schema=SCHEMA))
    assert bad.parsed is None and "no JSON found" in (bad.parse_error or "")
    good = await llm.chat(req("extract things", stage="extract", json_schema=SCHEMA))
    assert good.parsed == {"answer": "ok"} and good.parse_error is None
    stats = llm.accounting.stage("extract")
    assert stats.calls == 2 and stats.parse_failures == 1


async def test_no_matching_rule_names_stage_and_prompt(tmp_path: Path) -> None:
    llm, _ = mock_llm(tmp_path, [{"match": "^never$", "response": "x"}], cache=False)
    with pytest.raises(LLMError, match=r"stage 'rerank'.*'Rank these passages"):
        await llm.chat(req("Rank these passages please", stage="rerank"))
    assert llm.accounting.stage("rerank").failures == 1


def test_script_files_and_callable(tmp_path: Path, make_settings: Callable[..., Settings]) -> None:
    jsonl = tmp_path / "script.jsonl"
    jsonl.write_text(
        '# comment\n{"match": "hi", "response": "hello there"}\n\n{"response": "fallback"}\n'
    )
    settings = make_settings(backend="mock", mock_script=str(jsonl), cache=False)
    llm = build_llm(settings)
    assert llm is not None
    with llm:
        r = llm.chat_sync(req("hi you", stage="s"))
        assert (r.text, r.prompt_tokens, r.completion_tokens) == ("hello there", 2, 2)
        assert llm.chat_sync(req("other")).text == "fallback"
    as_list = tmp_path / "script.json"
    as_list.write_text(json.dumps([{"response": "listed"}]))
    assert MockBackend.from_file(as_list).rules[0].response == "listed"
    with pytest.raises(ConfigError):
        MockBackend.from_file(tmp_path / "missing.json")
    with pytest.raises(ConfigError, match="unknown keys"):
        MockBackend(rules=[{"respnse": "typo"}])
    echo = MockBackend(responder=lambda r: r.last_user_message().upper())
    assert LLM(echo).chat_sync(req("shout")).text == "SHOUT"
    assert build_llm(make_settings()) is None  # backend "none"
    with pytest.raises(ConfigError, match="mock_script"):
        build_llm(make_settings(backend="mock"))


async def test_cache_hits_and_misses(tmp_path: Path) -> None:
    llm, backend = mock_llm(tmp_path, [{"response": "Answer with four words"}])
    first = await llm.chat(req("q", stage="gen"))
    second = await llm.chat(req("q", stage="gen"))
    assert not first.cache_hit and second.cache_hit
    assert second.text == first.text and second.latency_s == 0.0
    assert len(backend.calls) == 1
    await llm.chat(req("q", stage="gen", temperature=0.7))
    await llm.chat(req("q", stage="gen", template_version="abc123"))
    await llm.chat(req("q", stage="gen", max_tokens=7))
    assert len(backend.calls) == 4
    assert len(llm.cache) == 4  # type: ignore[arg-type]
    gen = llm.accounting.stage("gen")
    assert (gen.calls, gen.cache_hits) == (5, 1)
    assert gen.prompt_tokens == 4 * 1 and gen.completion_tokens == 4 * 4  # hits add no tokens
    # An edited script is another model for the cache.
    assert (
        MockBackend(rules=[{"response": "a"}]).model != MockBackend(rules=[{"response": "b"}]).model
    )
    # The cache survives a new client on the same file.
    llm2, backend2 = mock_llm(tmp_path, [{"response": "Answer with four words"}])
    assert (await llm2.chat(req("q", stage="gen"))).cache_hit
    assert backend2.calls == []


async def test_errors_and_unparsed_answers_are_not_cached(tmp_path: Path) -> None:
    llm, backend = mock_llm(
        tmp_path,
        [
            {"error": "fatal", "message": "boom", "once": True},
            {"response": "garbage", "once": True},
            {"response": '{"answer": "yes"}'},
        ],
    )
    with pytest.raises(LLMError, match="boom"):
        await llm.chat(req("q", json_schema=SCHEMA))
    assert (await llm.chat(req("q", json_schema=SCHEMA))).parse_error
    ok = await llm.chat(req("q", json_schema=SCHEMA))
    hit = await llm.chat(req("q", json_schema=SCHEMA))
    assert ok.parsed == hit.parsed == {"answer": "yes"} and hit.cache_hit
    assert len(backend.calls) == 3
    with sqlite3.connect(tmp_path / "cache.sqlite") as conn:
        rows = conn.execute("SELECT response FROM llm_cache").fetchall()
    assert len(rows) == 1 and "garbage" not in rows[0][0]


async def test_chat_json_reasks_after_a_malformed_answer(tmp_path: Path) -> None:
    llm, backend = mock_llm(
        tmp_path, [{"response": "oops", "once": True}, {"response": '{"answer": 1}'}], cache=False
    )
    r = await llm.chat_json(req("q", json_schema=SCHEMA))
    assert r.parsed == {"answer": 1}
    assert backend.calls[1].messages[-2] == {"role": "assistant", "content": "oops"}


async def test_retry_rides_out_retryable_errors(tmp_path: Path) -> None:
    rules = [
        {"error": "retryable", "once": True},
        {"error": "retryable", "once": True},
        {"response": "fine"},
    ]
    llm, backend = mock_llm(tmp_path, rules, cache=False, max_retries=2)
    assert (await llm.chat(req("q", stage="s"))).text == "fine"
    s = llm.accounting.stage("s")
    assert (s.calls, s.attempt_errors, s.failures) == (1, 2, 0)
    llm, backend = mock_llm(
        tmp_path, [{"error": "retryable", "message": "overloaded"}], cache=False, max_retries=2
    )
    with pytest.raises(LLMError, match=r"failed after 3 tries: overloaded"):
        await llm.chat(req("q", stage="s"))
    assert len(backend.calls) == 3
    assert llm.accounting.stage("s").failures == 1


class SlowBackend:
    """Counts requests in flight."""

    name = "slow"
    model = "slow-1"

    def __init__(self) -> None:
        self.in_flight = 0
        self.max_in_flight = 0

    async def chat(self, req: ChatRequest) -> ChatResponse:
        self.in_flight += 1
        self.max_in_flight = max(self.max_in_flight, self.in_flight)
        await asyncio.sleep(0.01)
        self.in_flight -= 1
        return ChatResponse(
            text=req.last_user_message(),
            prompt_tokens=1,
            completion_tokens=1,
            latency_s=0.01,
            model=self.model,
            backend=self.name,
        )


async def test_chat_many_respects_concurrency_and_order() -> None:
    backend = SlowBackend()
    llm = LLM(backend, concurrency=2)
    out = await llm.chat_many([req(str(i), stage="many") for i in range(7)])
    assert [r.text for r in out] == [str(i) for i in range(7)]
    assert backend.max_in_flight == 2
    assert llm.accounting.stage("many").latency_s == pytest.approx(0.07)


def test_accounting_report_merge_and_run() -> None:
    a = Accounting()
    with a.run():
        a.record_call("extract", 10, 5, 0.5)
        a.record_cache_hit("extract")
        a.record_call("judge", 3, 1, 0.1, parse_failed=True)
        a.record_attempt_error("judge")
        a.record_failure("judge")
    rep = a.report()
    assert rep["stages"]["extract"]["calls"] == 2 and rep["stages"]["extract"]["cache_hits"] == 1
    assert rep["total"]["prompt_tokens"] == 13 and rep["total"]["failures"] == 1
    assert rep["wall_s"] >= 0.0
    json.dumps(rep)
    b = Accounting().merge(a).merge(rep)
    assert b.stage("extract").calls == 4 and b.total().completion_tokens == 12
    assert "extract" in a.format_report() and "TOTAL" in a.format_report()


class _Checkpoint:
    """A backend whose cache identity is set apart from its readable model name."""

    name = "fake"
    model = "final"

    def __init__(self, identity: str) -> None:
        self.identity = identity
        self.calls = 0

    def cache_identity(self) -> str:
        return self.identity

    async def chat(self, request: ChatRequest) -> ChatResponse:
        self.calls += 1
        return ChatResponse(text=f"from {self.identity}", model=self.model, backend=self.name)


async def test_the_cache_key_uses_a_backends_cache_identity(tmp_path: Path) -> None:
    from biorag.llm import cache_key

    path = tmp_path / "cache.sqlite"
    answers = []
    for identity in ("final@aaa:float32", "final@bbb:float32", "final@aaa:float32"):
        backend = _Checkpoint(identity)
        with LLM(backend, cache=SQLiteCache(path)) as llm:
            answers.append(await llm.chat(req("q")))
    assert [a.text for a in answers] == [f"from final@{x}:float32" for x in ("aaa", "bbb", "aaa")]
    assert [a.cache_hit for a in answers] == [False, False, True]
    assert {a.model for a in answers} == {"final"}
    conn = sqlite3.connect(path)
    rows = conn.execute("SELECT model FROM llm_cache").fetchall()
    conn.close()
    assert rows == [("final",), ("final",)]  # the readable name is what the rows show
    # A backend without an identity keeps the key it always had.
    llm, backend = mock_llm(tmp_path, [{"response": "a"}])
    await llm.chat(req("q2", max_tokens=5, temperature=0.0))
    key = cache_key(backend.name, backend.model, req("q2", max_tokens=5, temperature=0.0))
    assert llm.cache is not None and llm.cache.get(key) is not None
