"""How many parameters a local checkpoint holds, read from its headers without loading it.

``llm.load_in_4bit = "auto"`` quantizes only models large enough for it to pay: nf4 costs a small
model too much (SmolLM2-135M on an H200, 50 PubMedQA questions given their abstracts: answered
21 of 49 closed-book in nf4 against 44 of 50 in bfloat16; see docs/benchmarks.md).

* a ``.gguf`` file: the element counts of its tensors (the ``gguf`` package reads the header);
* a transformers directory: the shapes in each ``*.safetensors`` file's JSON header, or, for
  ``*.bin``/``*.pt`` weights only, their bytes over the configured dtype's width.
"""

from __future__ import annotations

import json
import math
import struct
from pathlib import Path

__all__ = ["AUTO_4BIT_MIN_PARAMS", "parameter_count"]

# "auto" loads a model in 4 bits from this many parameters up (a 1B model takes 2 GB in bf16).
AUTO_4BIT_MIN_PARAMS = 1_000_000_000

_DTYPE_BYTES = {"float32": 4, "float16": 2, "bfloat16": 2, "float64": 8, "int8": 1}


def _safetensors_params(path: Path) -> int:
    with path.open("rb") as f:
        (size,) = struct.unpack("<Q", f.read(8))
        header = json.loads(f.read(size))
    return sum(
        math.prod(meta.get("shape") or [])
        for name, meta in header.items()
        if name != "__metadata__" and isinstance(meta, dict)
    )


def _gguf_params(path: Path) -> int:
    from gguf import GGUFReader

    return sum(int(t.n_elements) for t in GGUFReader(str(path)).tensors)


def parameter_count(path: str | Path) -> int | None:
    """The parameters of the checkpoint at ``path`` (a ``.gguf`` file or a model directory), or
    None when they cannot be told without loading it."""
    path = Path(path)
    try:
        if path.is_file() and path.suffix.lower() == ".gguf":
            return _gguf_params(path)
        if not path.is_dir():
            return None
        tensors = sorted(path.glob("*.safetensors"))
        if tensors:
            return sum(_safetensors_params(p) for p in tensors)
        weights = [*path.glob("*.bin"), *path.glob("*.pt")]
        if not weights:
            return None
        config = json.loads((path / "config.json").read_text(encoding="utf-8"))
        width = _DTYPE_BYTES.get(str(config.get("torch_dtype") or config.get("dtype")), 4)
        return sum(p.stat().st_size for p in weights) // width
    except (OSError, ValueError, ImportError, struct.error):
        return None
