"""The in-process transformers backend with a tiny random Llama model built by the fixture."""

from __future__ import annotations

import importlib.util
from collections.abc import Callable
from pathlib import Path

import pytest

from biorag.config import Settings
from biorag.errors import ConfigError
from biorag.llm import ChatRequest, build_llm
from biorag.llm.hf_backend import HFBackend

MESSAGES = [
    {"role": "system", "content": "be brief"},
    {"role": "user", "content": "does aspirin reduce fever"},
]


async def test_greedy_generation_is_deterministic_with_counts_and_logprobs(
    tiny_model_dir: Path, make_settings: Callable[..., Settings]
) -> None:
    llm = build_llm(make_settings(backend="hf", hf_path=str(tiny_model_dir), cache=False))
    assert llm is not None and isinstance(llm.backend, HFBackend)
    req = ChatRequest(messages=MESSAGES, max_tokens=5, stage="gen")
    first = await llm.chat(req)
    second = await llm.chat(req)
    assert first.text == second.text and first.text.strip()
    assert first.backend == "hf" and first.model == tiny_model_dir.name
    assert first.completion_tokens in range(1, 6)
    # "system : be brief\nuser : does aspirin reduce fever\nassistant :" in word-level tokens
    assert first.prompt_tokens == 12
    assert first.logprobs is None
    with_lp = await llm.chat(req.model_copy(update={"logprobs": True, "top_logprobs": 3}))
    assert with_lp.text == first.text
    assert with_lp.logprobs is not None and len(with_lp.logprobs) == with_lp.completion_tokens
    head = with_lp.logprobs[0]
    assert head.logprob <= 0.0 and len(head.top) == 3
    assert max(head.top.values()) == pytest.approx(head.logprob)  # greedy picks the best token
    gen = llm.accounting.stage("gen")
    assert gen.calls == 3 and gen.completion_tokens == 3 * first.completion_tokens


async def test_stop_strings_and_template_fallback(tiny_model_dir: Path) -> None:
    backend = HFBackend(tiny_model_dir)
    req = ChatRequest(messages=MESSAGES, max_tokens=5)
    full = await backend.chat(req)
    words = full.text.split()
    assert len(words) >= 2
    cut = await backend.chat(req.model_copy(update={"stop": [words[1]]}))
    assert cut.text == full.text[: full.text.index(words[1])]
    assert cut.finish_reason == "stop" and cut.completion_tokens <= full.completion_tokens
    backend._tok.chat_template = None  # a tokenizer without a chat template
    assert backend._prompt(MESSAGES) == (
        "system: be brief\nuser: does aspirin reduce fever\nassistant:",
        True,
    )
    plain = await backend.chat(req)
    assert plain.completion_tokens in range(1, 6)


@pytest.mark.skipif(
    importlib.util.find_spec("bitsandbytes") is not None, reason="bitsandbytes is installed"
)
async def test_4bit_without_bitsandbytes_is_a_config_error(tiny_model_dir: Path) -> None:
    with pytest.raises(ConfigError, match="bitsandbytes"):
        await HFBackend(tiny_model_dir, load_in_4bit="yes").chat(
            ChatRequest(messages=MESSAGES, max_tokens=2)
        )
