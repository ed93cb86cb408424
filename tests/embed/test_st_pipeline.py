"""The pipelined encoder: the models it refuses, the tokenizer settings it copies, the probe
that checks them, when ``pipeline="auto"`` uses it, and how its verdict is kept."""

from __future__ import annotations

import gc
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from biorag.embed.st_embedder import BUNDLED_NAME, SentenceTransformerEmbedder
from biorag.embed.st_pipeline import VERDICT_ATTR, PipelinedEncoder

Variant = Callable[[str, dict[str, dict[str, Any]]], Path]

# Many texts of equal length: which of them share a batch (and so how much padding each gets)
# depends on the order the encoder sorts them in.
TEXTS = [f"Metformin lowers glucose in patient {i}" + " and more" * (i % 7) for i in range(150)]


def _both(path: Path, batch_size: int = 16) -> tuple[SentenceTransformerEmbedder, ...]:
    on = SentenceTransformerEmbedder(path, batch_size=batch_size, pipeline="on")
    off = SentenceTransformerEmbedder(path, batch_size=batch_size, pipeline="off")
    return on, off


@pytest.mark.slow
def test_a_model_with_a_default_prompt_keeps_sentence_transformers_encode(
    minilm_variant: Variant,
) -> None:
    path = minilm_variant(
        "prompted",
        {
            "config_sentence_transformers.json": {
                "prompts": {"query": "query: ", "document": ""},
                "default_prompt_name": "query",
            }
        },
    )
    on, off = _both(path)
    assert PipelinedEncoder.for_model(on._load(), TEXTS) is None
    np.testing.assert_allclose(on.embed(TEXTS[:20]), off.embed(TEXTS[:20]), atol=2e-5)


@pytest.mark.slow
@pytest.mark.parametrize(
    "edits",
    [
        {"tokenizer_config.json": {"padding_side": "left"}},
        {
            "tokenizer_config.json": {"truncation_side": "left"},
            "sentence_bert_config.json": {"max_seq_length": 12},  # truncates most TEXTS
        },
    ],
    ids=["left-padding", "left-truncation"],
)
def test_left_padding_and_truncation_are_reproduced(
    minilm_variant: Variant, edits: dict[str, dict[str, Any]]
) -> None:
    path = minilm_variant("left", edits)
    on, off = _both(path)
    on.embed([TEXTS[0]])  # one text decides: it pads and truncates nothing by itself
    # used: the copy follows the tokenizer's sides
    assert PipelinedEncoder.for_model(on._load(), [TEXTS[0]]) is not None
    np.testing.assert_allclose(on.embed(TEXTS), off.embed(TEXTS), atol=2e-5)


@pytest.mark.slow
def test_the_probe_always_pads_and_truncates(minilm: SentenceTransformerEmbedder) -> None:
    model = minilm._load()
    enc = PipelinedEncoder(model)
    sample = ["Metformin lowers glucose.", "Aspirin reduces fever too."]  # equal lengths
    probe = enc.probe(sample)
    assert min(len(t.split()) for t in probe) == 1
    assert max(len(t.split()) for t in probe) > model.max_seq_length
    assert enc.matches_reference(sample) and enc.matches_reference(sample[:1])

    wrong_padding = PipelinedEncoder(model)
    wrong_padding.rust.enable_padding(direction="left", pad_id=0, pad_token="[PAD]")
    assert not wrong_padding.matches_reference(sample)
    assert not wrong_padding.matches_reference(sample[:1])
    wrong_truncation = PipelinedEncoder(model)
    wrong_truncation.rust.enable_truncation(max_length=enc.max_len, direction="left")
    assert not wrong_truncation.matches_reference(sample)


@pytest.mark.slow
def test_auto_pipelines_every_call_off_the_cpu(
    minilm: SentenceTransformerEmbedder, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls: list[int] = []
    real = PipelinedEncoder.encode

    def spy(self: PipelinedEncoder, texts: list[str], *args: Any, **kwargs: Any) -> Any:
        calls.append(len(texts))
        return real(self, texts, *args, **kwargs)

    monkeypatch.setattr(PipelinedEncoder, "encode", spy)
    # "cuda:0" as configured, run on the CPU model the session already loaded
    gpu = SentenceTransformerEmbedder(BUNDLED_NAME, device="cuda:0", batch_size=256)
    gpu._model = minilm._load()
    texts = TEXTS[:3]
    np.testing.assert_allclose(gpu.embed(texts), minilm.embed(texts), atol=2e-5)
    gpu.embed_query(texts[0])
    assert calls == [3, 1]  # fewer texts than batch_size: pipelined all the same
    assert not SentenceTransformerEmbedder(BUNDLED_NAME, device="cuda").on_cpu
    cpu = SentenceTransformerEmbedder(BUNDLED_NAME, device="cpu", batch_size=2)
    assert cpu.on_cpu
    cpu.embed(texts)
    assert calls == [3, 1]  # the CPU keeps sentence-transformers' encode


class _FakeModel:
    """Stands for a model; ``ok`` says whether the (patched) reference check passes."""

    def __init__(self, ok: bool) -> None:
        self.ok = ok


@pytest.fixture
def fake_checks(monkeypatch: pytest.MonkeyPatch) -> list[object]:
    """Patch the encoder so any object can be checked; the list records every construction."""
    made: list[object] = []

    def init(self: PipelinedEncoder, model: Any) -> None:
        made.append(model)
        time.sleep(0.05)  # a slow check, so two threads overlap
        self.model = model

    monkeypatch.setattr(PipelinedEncoder, "__init__", init)
    monkeypatch.setattr(PipelinedEncoder, "matches_reference", lambda self, s: self.model.ok)
    return made


def test_the_verdict_is_kept_on_the_model(fake_checks: list[object]) -> None:
    denied = _FakeModel(ok=False)
    assert PipelinedEncoder.for_model(denied, ["x"]) is None
    assert getattr(denied, VERDICT_ATTR) is None
    assert PipelinedEncoder.for_model(denied, ["x"]) is None
    assert len(fake_checks) == 1  # checked once

    # A new model at the freed address gets its own check, not the old verdict.
    address = id(denied)
    del denied
    gc.collect()
    fresh = [_FakeModel(ok=True) for _ in range(50)]
    reused = next((m for m in fresh if id(m) == address), fresh[0])
    assert PipelinedEncoder.for_model(reused, ["x"]) is not None


def test_two_threads_check_a_model_once(fake_checks: list[object]) -> None:
    model = _FakeModel(ok=True)
    results: list[Any] = []
    threads = [
        threading.Thread(target=lambda: results.append(PipelinedEncoder.for_model(model, ["x"])))
        for _ in range(2)
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(fake_checks) == 1
    assert results[0] is results[1] is not None
