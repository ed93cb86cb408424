"""llama-cpp-python's server as the backend meets it (seen for real in
tests/real_llm/test_llama_cpp_python_server.py): found by its token counter, asked for JSON in the
form it takes, its prompts counted by it, and its context window learned from its refusal, since
it reports none. Fault injection through the fake server of tests/llm."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from tests.llm.conftest import completion
from tests.llm.test_llm_servers import SCHEMA, _passages, req

from biorag.llm import LLM
from biorag.llm.context import ContextTooSmallError, collect_fits
from biorag.llm.openai.errors import window_in as _window_in

FakeOpenAI = Any


def _as_llama_cpp_python(fake: FakeOpenAI) -> None:
    model = "/models/SmolLM2-135M-Instruct.Q4_1.gguf"  # it lists the model's path as its id
    fake.get_routes["/v1/models"] = {"data": [{"id": model, "object": "model", "owned_by": "me"}]}
    # one token per whitespace word, so the arithmetic can be checked
    fake.post_routes["/extras/tokenize/count"] = lambda body: {"count": len(body["input"].split())}


def _overflow_at(n_ctx: int) -> Callable[[dict[str, Any]], Any]:
    """Its reply to a prompt over ``n_ctx`` words: HTTP 400 naming the window in the message."""

    def answer(body: dict[str, Any]) -> Any:
        words = sum(len(m["content"].split()) for m in body["messages"])
        if words + (body.get("max_tokens") or 0) > n_ctx:
            msg = f"Requested tokens ({words}) exceed context window of {n_ctx}"
            return 400, {}, {"error": {"message": msg, "type": "invalid_request_error"}}, 0.0
        return 200, {}, completion('{"answer": "yes"}', body), 0.0

    return answer


def test_the_window_is_read_from_each_servers_refusal() -> None:
    assert _window_in("Requested tokens (2500) exceed context window of 2048", {}) == 2048
    msg = "This model's maximum context length is 4096 tokens. However, you requested 5000"
    assert _window_in(msg, {}) == 4096
    assert _window_in("the request exceeds the available context size", {"n_ctx": 512}) == 512
    assert _window_in("prompt too long", {}) is None


async def test_found_by_its_counter_asked_in_its_own_form(
    fake_openai: FakeOpenAI, llm_for: Callable[..., LLM]
) -> None:
    _as_llama_cpp_python(fake_openai)
    fake_openai.default = lambda body: (200, {}, completion('{"answer": "yes"}', body), 0.0)
    llm = llm_for(context_window=2048)
    r = await llm.chat(req(json_schema=SCHEMA))
    assert r.parsed == {"answer": "yes"}
    (sent,) = fake_openai.requests  # no json_schema refusal first (its HTTP 500)
    assert sent["body"]["response_format"] == {"type": "json_object", "schema": SCHEMA}
    await llm.aclose()


async def test_its_window_is_learned_from_its_refusal_then_prompts_fit(
    fake_openai: FakeOpenAI, llm_for: Callable[..., LLM]
) -> None:
    _as_llama_cpp_python(fake_openai)
    fake_openai.default = _overflow_at(300)
    llm = llm_for(max_tokens=100)  # no llm.context_window: the server reports none
    prompt = "Question: does it work?\n\n" + _passages(10)
    with collect_fits() as fits:
        r = await llm.chat(req(prompt))
        again = await llm.chat(req(prompt))
    assert r.text and again.text
    statuses = [q["body"]["messages"][0]["content"].count("<passage") for q in fake_openai.requests]
    assert len(statuses) == 3 and statuses[0] == 10  # refused once, then fitted both times
    assert statuses[1] == statuses[2] < 10
    assert len(fits) == 2 and all(f["window"] == 300 and f["dropped"] for f in fits)
    await llm.aclose()


async def test_a_refusal_naming_no_window_is_one_clear_error(
    fake_openai: FakeOpenAI, llm_for: Callable[..., LLM]
) -> None:
    _as_llama_cpp_python(fake_openai)
    fake_openai.default = lambda body: (
        400,
        {},
        {"error": {"message": "prompt exceeds the context"}},
        0.0,
    )
    llm = llm_for()
    with pytest.raises(Exception, match=r"llm\.context_window") as info:
        await llm.chat(req("Q?\n\n" + _passages(3)))
    assert "Traceback" not in str(info.value)
    assert len(fake_openai.requests) == 1  # not retried as is
    await llm.aclose()


async def test_one_passage_over_the_window_says_what_it_needs(
    fake_openai: FakeOpenAI, llm_for: Callable[..., LLM]
) -> None:
    _as_llama_cpp_python(fake_openai)
    llm = llm_for(context_window=150, max_tokens=64)
    with pytest.raises(ContextTooSmallError, match=r"needs \d+ tokens with one passage") as info:
        await llm.chat(req("Q?\n\n" + _passages(3, words=200)))
    need = int(str(info.value).split("needs ")[1].split()[0])
    assert need > 200  # the best passage's words are counted, not the prompt without any
    assert fake_openai.requests == []
    await llm.aclose()
