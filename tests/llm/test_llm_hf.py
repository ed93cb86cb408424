"""The in-process transformers backend with a tiny random Llama model built by the fixture:
generation, reasoning output, and how the cache tells local models apart."""

from __future__ import annotations

import importlib.util
import shutil
from collections.abc import Callable
from pathlib import Path
from types import SimpleNamespace
from typing import Any

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


async def test_generation_stops_at_the_onset_of_a_loop(tiny_model_dir: Path) -> None:
    req = ChatRequest(messages=MESSAGES, max_tokens=100)
    full = await HFBackend(tiny_model_dir, stop_loops=False).chat(req)
    # the random model loops: run to its budget, the loop is cut afterwards
    assert full.finish_reason == "length" and full.completion_tokens == 100
    assert full.repetition_cut
    early = await HFBackend(tiny_model_dir).chat(req)
    assert early.finish_reason == "loop" and early.completion_tokens < 100
    assert early.text == full.text  # the same answer once the loop is cut back


@pytest.mark.skipif(
    importlib.util.find_spec("bitsandbytes") is not None, reason="bitsandbytes is installed"
)
async def test_4bit_without_bitsandbytes_is_a_config_error(tiny_model_dir: Path) -> None:
    with pytest.raises(ConfigError, match="bitsandbytes"):
        await HFBackend(tiny_model_dir, load_in_4bit="yes").chat(
            ChatRequest(messages=MESSAGES, max_tokens=2)
        )


def _stub_generation(
    backend: HFBackend, tokens: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Make the loaded model "generate" ``tokens`` after any prompt."""
    import torch

    ids = backend._tok.convert_tokens_to_ids(tokens)

    def generate(**kwargs: Any) -> Any:
        prompt = kwargs["input_ids"]
        new = torch.tensor([ids], dtype=prompt.dtype, device=prompt.device)
        return SimpleNamespace(sequences=torch.cat([prompt, new], dim=1), logits=None)

    monkeypatch.setattr(backend._lm, "generate", generate)


@pytest.mark.parametrize("special", [False, True], ids=["plain-token", "special-token"])
async def test_a_reasoning_models_thinking_goes_to_reasoning(
    tiny_model_dir: Path, monkeypatch: pytest.MonkeyPatch, special: bool
) -> None:
    # The chat template of DeepSeek-R1 / QwQ ends the prompt with "<think>\n": the output
    # holds the thinking, then "</think>", then the answer. Some tokenizers count "</think>"
    # special, which decoding would skip.
    backend = HFBackend(tiny_model_dir)
    await backend.chat(ChatRequest(messages=MESSAGES, max_tokens=1))  # loads the model
    backend._tok.add_tokens(["</think>"], special_tokens=special)
    _stub_generation(backend, ["the", "patient", "has", "</think>", "yes"], monkeypatch)
    resp = await backend.chat(ChatRequest(messages=MESSAGES, max_tokens=8))
    assert (resp.text, resp.reasoning) == ("yes", "the patient has")
    assert resp.completion_tokens == 5


def _copy_as(src: Path, dst: Path, change_weights: bool) -> Path:
    shutil.copytree(src, dst)
    if change_weights:  # another fine-tune: same config, same weight file size
        weights = dst / "model.safetensors"
        data = bytearray(weights.read_bytes())
        data[-1] ^= 1
        weights.write_bytes(bytes(data))
    return dst


async def test_checkpoints_in_folders_of_one_name_do_not_share_cached_answers(
    tiny_model_dir: Path, tmp_path: Path, make_settings: Callable[..., Settings]
) -> None:
    one = _copy_as(tiny_model_dir, tmp_path / "run1" / "final", change_weights=False)
    two = _copy_as(tiny_model_dir, tmp_path / "run2" / "final", change_weights=True)
    req = ChatRequest(messages=MESSAGES, max_tokens=3, stage="gen")
    answers = []
    for path in (one, two, one):
        llm = build_llm(make_settings(backend="hf", hf_path=str(path), cache=True))
        assert llm is not None
        answers.append(await llm.chat(req))
        llm.close()
    first, other, again = answers
    assert not first.cache_hit and not other.cache_hit  # the second model was asked
    assert again.cache_hit and again.text == first.text  # the cache still works
    assert first.model == other.model == "final"  # responses show the readable name
    # a moved copy of the same model is the same model for the cache
    moved = _copy_as(one, tmp_path / "elsewhere" / "final", change_weights=False)
    assert HFBackend(moved).cache_identity() == HFBackend(one).cache_identity()
    assert HFBackend(one).cache_identity() != HFBackend(two).cache_identity()


def test_the_cache_identity_names_how_the_model_loads(
    tiny_model_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(HFBackend, "_use_4bit", lambda self, torch: self.load_in_4bit == "yes")
    full = HFBackend(tiny_model_dir, load_in_4bit="no")
    four_bit = HFBackend(tiny_model_dir, load_in_4bit="yes")
    assert full.model == four_bit.model == tiny_model_dir.name
    assert four_bit.cache_identity().startswith(f"{tiny_model_dir.name}@")
    assert four_bit.cache_identity().endswith(":nf4")
    assert full.cache_identity().endswith((":float32", ":bfloat16"))
    with pytest.raises(ConfigError, match="not a model directory"):
        HFBackend(tiny_model_dir / "missing").cache_identity()


def test_model_fingerprint_samples_large_files(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from biorag.util import fingerprint

    monkeypatch.setattr(fingerprint, "FULL_HASH_LIMIT", 1000)  # sample anything larger
    a = tmp_path / "a" / "final"
    a.mkdir(parents=True)
    (a / "config.json").write_text('{"layers": 2}')
    (a / "model.bin").write_bytes(bytes(range(256)) * 4096)  # 1 MiB
    base = fingerprint.model_fingerprint(a)
    b = tmp_path / "b" / "final"
    shutil.copytree(a, b)
    assert fingerprint.model_fingerprint(b) == base  # content, not location
    (b / ".cache").mkdir()
    (b / ".cache" / "download.lock").write_text("now")
    assert fingerprint.model_fingerprint(b) == base  # hidden files are not the model
    data = bytearray((b / "model.bin").read_bytes())
    data[0] ^= 1
    (b / "model.bin").write_bytes(bytes(data))
    assert fingerprint.model_fingerprint(b) != base  # same size, other bytes
    (b / "model.bin").write_bytes(bytes(range(256)) * 4097)
    assert fingerprint.model_fingerprint(b) != base
    (a / "config.json").write_text('{"layers": 3}')
    assert fingerprint.model_fingerprint(a) != base
