"""The transformers backend on a CUDA GPU: bf16 and 4-bit (bitsandbytes) loading.

Skipped without CUDA (CI has none). Run on a GPU machine with
``python -m pytest tests/llm/test_llm_hf_gpu.py``. The model is a small random Llama built here
(hidden size 256, so every projection is a real 4-bit layer), with the word-level tokenizer of
the ``tiny_model_dir`` fixture.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from biorag.llm import ChatRequest
from biorag.llm.hf_backend import HFBackend

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
needs_bnb = pytest.mark.skipif(
    not torch.cuda.is_available() or importlib.util.find_spec("bitsandbytes") is None,
    reason="needs a CUDA GPU and bitsandbytes",
)

MESSAGES = [
    {"role": "system", "content": "be brief"},
    {"role": "user", "content": "does aspirin reduce fever"},
]


@pytest.fixture(scope="module")
def gpu_model_dir(tiny_model_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    from tests.llm.conftest import save_random_llama
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(str(tiny_model_dir))
    path = tmp_path_factory.mktemp("gpu-llama")
    return save_random_llama(path, tok, hidden=256, layers=4, heads=4, seed=5)


def _module_kinds(backend: HFBackend) -> set[str]:
    return {type(m).__name__ for m in backend._lm.modules()}


async def test_bf16_generation_on_cuda_is_deterministic(gpu_model_dir: Path) -> None:
    backend = HFBackend(gpu_model_dir, load_in_4bit="no")
    req = ChatRequest(messages=MESSAGES, max_tokens=6, logprobs=True, top_logprobs=2)
    first = await backend.chat(req)
    second = await backend.chat(req)
    lm = backend._lm
    assert lm.device.type == "cuda" and lm.dtype == torch.bfloat16
    assert "Linear4bit" not in _module_kinds(backend)
    assert first.text == second.text and first.completion_tokens in range(1, 7)
    assert first.logprobs is not None and len(first.logprobs) == first.completion_tokens
    assert all(t.logprob <= 0.0 for t in first.logprobs)


@needs_bnb
async def test_4bit_loading_quantizes_and_generates(gpu_model_dir: Path) -> None:
    full = HFBackend(gpu_model_dir, load_in_4bit="no")
    await full.chat(ChatRequest(messages=MESSAGES, max_tokens=2))
    four = HFBackend(gpu_model_dir, load_in_4bit="yes")
    req = ChatRequest(messages=MESSAGES, max_tokens=6)
    first = await four.chat(req)
    second = await four.chat(req)
    assert "Linear4bit" in _module_kinds(four)
    assert next(four._lm.parameters()).device.type == "cuda"
    # nf4 weights: well under the bf16 footprint (embeddings and norms stay 16-bit)
    assert four._lm.get_memory_footprint() < 0.75 * full._lm.get_memory_footprint()
    assert first.text == second.text and first.completion_tokens in range(1, 7)
    assert first.backend == "hf" and first.prompt_tokens == 12


@needs_bnb
def test_auto_chooses_4bit_for_big_models_when_cuda_and_bitsandbytes_are_present(
    gpu_model_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from biorag.llm import model_size

    assert HFBackend(gpu_model_dir, load_in_4bit="auto")._use_4bit(torch) is False  # too small
    monkeypatch.setattr(model_size, "AUTO_4BIT_MIN_PARAMS", 1000)
    assert HFBackend(gpu_model_dir, load_in_4bit="auto")._use_4bit(torch) is True
    assert HFBackend(gpu_model_dir, load_in_4bit="no")._use_4bit(torch) is False
