"""Parameter counts read from checkpoint headers, and the "auto" 4-bit choice they drive."""

from __future__ import annotations

import importlib.util
import json
import struct
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from devkit.smollm2 import smollm2_gguf_path

from biorag.llm import model_size
from biorag.llm.hf_backend import HFBackend
from biorag.llm.model_size import parameter_count


def _header_only_safetensors(path: Path, shapes: dict[str, list[int]]) -> None:
    """A safetensors header declaring ``shapes`` (no tensor data: only the header is read)."""
    header: dict[str, Any] = {"__metadata__": {"format": "pt"}}
    for name, shape in shapes.items():
        header[name] = {"dtype": "BF16", "shape": shape, "data_offsets": [0, 0]}
    raw = json.dumps(header).encode()
    path.write_bytes(struct.pack("<Q", len(raw)) + raw)


def test_safetensors_directories_are_counted_from_their_headers(tmp_path: Path) -> None:
    _header_only_safetensors(tmp_path / "model-1.safetensors", {"a": [4096, 4096], "b": [7]})
    _header_only_safetensors(tmp_path / "model-2.safetensors", {"c": [32000, 4096]})
    assert parameter_count(tmp_path) == 4096 * 4096 + 7 + 32000 * 4096


def test_bin_weights_are_counted_by_bytes_over_the_dtype(tmp_path: Path) -> None:
    (tmp_path / "config.json").write_text(json.dumps({"torch_dtype": "bfloat16"}))
    (tmp_path / "pytorch_model.bin").write_bytes(b"\0" * 1000)
    assert parameter_count(tmp_path) == 500


def test_unreadable_checkpoints_have_no_count(tmp_path: Path) -> None:
    assert parameter_count(tmp_path / "missing") is None
    assert parameter_count(tmp_path) is None  # no weights at all
    (tmp_path / "broken.safetensors").write_bytes(b"\x05")
    assert parameter_count(tmp_path) is None


def test_the_tiny_model_fixture_is_counted_exactly(tiny_model_dir: Path) -> None:
    from transformers import AutoModelForCausalLM

    lm = AutoModelForCausalLM.from_pretrained(str(tiny_model_dir))
    assert parameter_count(tiny_model_dir) == sum(p.numel() for p in lm.parameters())


def test_smollm2_gguf_is_counted_from_its_tensors() -> None:
    path = smollm2_gguf_path()
    if path is None or importlib.util.find_spec("gguf") is None:
        pytest.skip("the SmolLM2 GGUF package or gguf is not installed")
    assert parameter_count(path) == pytest.approx(134.5e6, rel=0.01)


class _Torch:
    """Just what ``_use_4bit`` asks of torch, with CUDA present."""

    cuda = SimpleNamespace(is_available=lambda: True)


@pytest.fixture
def with_bitsandbytes(monkeypatch: pytest.MonkeyPatch) -> None:
    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util,
        "find_spec",
        lambda name, *a: SimpleNamespace() if name == "bitsandbytes" else real(name, *a),
    )


def test_auto_quantizes_only_models_of_a_billion_parameters(
    tmp_path: Path, with_bitsandbytes: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    small, big, unknown = tmp_path / "small", tmp_path / "big", tmp_path / "unknown"
    for d in (small, big, unknown):
        d.mkdir()
    _header_only_safetensors(small / "model.safetensors", {"w": [576, 49152]})
    _header_only_safetensors(big / "model.safetensors", {"w": [8192, 8192], "x": [32, 4096, 8]})
    assert parameter_count(big) == 8192 * 8192 + 32 * 4096 * 8
    monkeypatch.setattr(model_size, "AUTO_4BIT_MIN_PARAMS", 50_000_000)
    assert HFBackend(small, load_in_4bit="auto")._use_4bit(_Torch) is False
    assert HFBackend(big, load_in_4bit="auto")._use_4bit(_Torch) is True
    assert HFBackend(unknown, load_in_4bit="auto")._use_4bit(_Torch) is True  # size unknown
    assert HFBackend(small, load_in_4bit="yes")._use_4bit(_Torch) is True
    assert HFBackend(big, load_in_4bit="no")._use_4bit(_Torch) is False
    assert HFBackend(small, load_in_4bit="auto")._precision(_Torch) == "bfloat16"
    assert HFBackend(big, load_in_4bit="auto")._precision(_Torch) == "nf4"
