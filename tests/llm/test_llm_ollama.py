"""Ollama as the backend meets it: a prompt longer than the model's ``num_ctx`` is not refused
but cut silently (the server keeps the end of it), so the window can never be learned from an
error. biorag reads it from the model's parameters (``/api/show``), or assumes Ollama's smallest
default and says so, or takes ``llm.context_window``; either way prompts are fitted before they
are sent and the server never has to cut. Fault injection through a fake that cuts as Ollama
does."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

import pytest
from tests.llm.conftest import completion
from tests.llm.test_llm_servers import _passages, req

from biorag.llm import LLM
from biorag.llm.context import collect_fits
from biorag.llm.openai.server_info import OLLAMA_DEFAULT_WINDOW

FakeOpenAI = Any


def _as_ollama(fake: FakeOpenAI, num_ctx: int | None, cut: list[int]) -> None:
    """Ollama's routes; its chat cuts a prompt over the window to its last words (recorded in
    ``cut``) and answers as if nothing happened. A word is a token here."""
    window = num_ctx or OLLAMA_DEFAULT_WINDOW
    fake.get_routes["/api/version"] = {"version": "0.6.8"}
    fake.get_routes["/v1/models"] = {"data": [{"id": "tiny", "owned_by": "library"}]}
    params = f"num_ctx                        {num_ctx}\nstop <|im_end|>" if num_ctx else ""
    fake.post_routes["/api/show"] = lambda body: {"parameters": params, "model_info": {}}

    def chat(body: dict[str, Any]) -> Any:
        words = sum(len(m["content"].split()) for m in body["messages"])
        if words + (body.get("max_tokens") or 0) > window:
            cut.append(words)
        return 200, {}, completion("yes", body, prompt_tokens=min(words, window)), 0.0

    fake.default = chat


@pytest.mark.parametrize("num_ctx", [600, None], ids=["model-num-ctx", "server-default"])
async def test_prompts_are_fitted_before_ollama_would_cut_them(
    fake_openai: FakeOpenAI,
    llm_for: Callable[..., LLM],
    num_ctx: int | None,
    caplog: pytest.LogCaptureFixture,
) -> None:
    cut: list[int] = []
    _as_ollama(fake_openai, num_ctx, cut)
    llm = llm_for(max_tokens=100)
    prompt = "Question: does it work?\n\n" + _passages(80, words=40)  # ~3,500 words
    with caplog.at_level(logging.WARNING, logger="biorag.llm"), collect_fits() as fits:
        r = await llm.chat(req(prompt))
        await llm.chat(req(prompt))
    assert r.text == "yes"
    assert not cut, f"the server had to cut prompts of {cut} words"
    window = num_ctx or OLLAMA_DEFAULT_WINDOW
    assert [f["window"] for f in fits] == [window, window] and fits[0]["dropped"]
    assumed = [m for m in caplog.messages if "llm.context_window" in m]
    assert len(assumed) == (0 if num_ctx else 1)  # the assumption is said, once
    await llm.aclose()


async def test_a_configured_window_is_used_as_is(
    fake_openai: FakeOpenAI, llm_for: Callable[..., LLM], caplog: pytest.LogCaptureFixture
) -> None:
    cut: list[int] = []
    _as_ollama(fake_openai, None, cut)
    llm = llm_for(max_tokens=100, context_window=1000)
    with caplog.at_level(logging.WARNING, logger="biorag.llm"), collect_fits() as fits:
        await llm.chat(req("Question: does it work?\n\n" + _passages(80, words=40)))
    assert not cut and fits[0]["window"] == 1000
    assert not [m for m in caplog.messages if "llm.context_window" in m]
    await llm.aclose()
