"""Every door's LLM client is composed in one place (``client_of``): the CLI's ``build_llm`` and
the shared backend's clients (the service, eval, the judges, the batch workers) get the same
chain, so a prompt too long for the window is fitted whichever door asked it. Before, the shared
clients had no context fit (the fit looked for the window on the limit wrapper, which has none),
and ``biorag eval`` lost every answer to the server's refusal where ``biorag ask`` answered.
Fault injection through the fake server of tests/llm (the real server: tests/real_llm)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from tests.llm.test_llm_llama_cpp_python import _as_llama_cpp_python, _overflow_at
from tests.llm.test_llm_servers import _as_llama, _passages, req

from biorag.llm import build_llm
from biorag.llm.accounting import Accounting
from biorag.llm.context import collect_fits
from biorag.llm.shared import SharedLLM

FakeOpenAI = Any


def _settings(make_settings: Callable[..., Any], url: str, **kw: Any) -> Any:
    fields = {"backend": "openai", "base_url": url, "model": "tiny", "max_retries": 1, **kw}
    return make_settings(**fields)


@pytest.mark.parametrize("cache", [False, True])
async def test_the_shared_clients_have_the_chain_of_build_llm(
    make_settings: Callable[..., Any], cache: bool
) -> None:
    settings = _settings(make_settings, "http://127.0.0.1:9/v1", context_window=1024, cache=cache)
    alone = build_llm(settings)
    shared = SharedLLM(settings)
    client = shared.client(Accounting())
    assert alone is not None and client is not None
    expected = ["ContextFitMiddleware", "RetryMiddleware", "ConcurrencyLimit"]
    expected = (["CacheMiddleware"] if cache else []) + expected + ["AccountingMiddleware"]
    assert alone.chain_names() == [*expected, "OpenAIBackend"]
    # the same, with the limit all the shared clients go through below it
    assert client.chain_names() == [*expected, "ConcurrencyLimit", "OpenAIBackend"]
    alone.close()
    await shared.aclose()


@pytest.mark.parametrize("door", ["build_llm", "shared"])
async def test_every_door_fits_a_long_prompt_to_the_window(
    fake_openai: FakeOpenAI, make_settings: Callable[..., Any], door: str
) -> None:
    _as_llama(fake_openai, n_ctx=300)
    settings = _settings(make_settings, fake_openai.url, cache=False, max_tokens=200)
    shared = SharedLLM(settings)
    llm = build_llm(settings) if door == "build_llm" else shared.client(Accounting())
    assert llm is not None
    with collect_fits() as fits:
        r = await llm.chat(req("Question: does it work?\n\n" + _passages(10)))
    assert r.text
    (fit,) = fits
    assert fit["window"] == 300 and fit["dropped"]
    sent = fake_openai.requests[-1]["body"]
    assert len(sent["messages"][0]["content"].split()) + 8 + sent["max_tokens"] <= 300
    await llm.aclose()
    await shared.aclose()


async def test_a_window_learned_by_one_shared_client_serves_the_others(
    fake_openai: FakeOpenAI, make_settings: Callable[..., Any]
) -> None:
    """llama-cpp-python states its window only by refusing: eval's first question learns it,
    and the next questions' clients fit their prompts from the start (one refusal in all)."""
    _as_llama_cpp_python(fake_openai)
    fake_openai.default = _overflow_at(300)
    shared = SharedLLM(_settings(make_settings, fake_openai.url, cache=False, max_tokens=100))
    prompt = "Question: does it work?\n\n" + _passages(10)
    for _ in range(3):  # three questions, a client each
        client = shared.client(Accounting())
        assert (await client.chat(req(prompt))).text
    passages = [q["body"]["messages"][0]["content"].count("<passage") for q in fake_openai.requests]
    assert len(passages) == 4 and passages[0] == 10  # refused once, then fitted every time
    assert all(n < 10 for n in passages[1:])
    await shared.aclose()
