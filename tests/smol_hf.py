"""SmolLM2-135M-Instruct for the in-process (``hf``) backend's real-model tests: its GGUF file
converted once per pytest session (the ``converted`` fixture of tests/conftest.py)."""

from __future__ import annotations

import importlib.util
import time
from dataclasses import dataclass
from pathlib import Path

import pytest
from devkit.smollm2 import SMOLLM2_INSTALL, smollm2_gguf_path

from biorag.config import LLMSettings, Settings
from biorag.llm import build_llm
from biorag.llm.hf_backend import HFBackend


def smollm2_or_skip() -> Path:
    """The GGUF file, or a skip that says what is missing and how to install it."""
    path = smollm2_gguf_path()
    missing = [m for m in ("gguf", "accelerate") if importlib.util.find_spec(m) is None]
    reason = None
    if path is None:
        reason = f"the SmolLM2 GGUF package is not installed ({SMOLLM2_INSTALL})"
    elif missing:
        reason = f"{' and '.join(missing)} not installed (pip install 'biorag[gguf]')"
    if reason:
        print(f"SKIP real_llm: {reason}")
        pytest.skip(reason)
    assert path is not None
    return path


def hf_settings(gguf: Path, home: Path) -> Settings:
    """``llm.backend = "hf"`` on the GGUF file, the LLM cache off, caches under ``home``."""
    llm = LLMSettings(backend="hf", hf_path=str(gguf), cache=False)
    return Settings(home=str(home), llm=llm)


@dataclass
class Converted:
    gguf: Path
    home: Path
    backend: HFBackend  # the one that converted (loaded, ready)
    load_s: float  # first load: conversion plus loading the converted directory

    def settings(self) -> Settings:
        return hf_settings(self.gguf, self.home)


def timed_load(backend: HFBackend) -> float:
    """Load ``backend``'s model now (converting the GGUF file if it is not yet); seconds."""
    start = time.perf_counter()
    with backend._lock:
        backend._load()
    return time.perf_counter() - start


def convert(home: Path) -> Converted:
    """SmolLM2 converted from its GGUF file into ``home`` and loaded (or a skip saying why)."""
    gguf = smollm2_or_skip()
    llm = build_llm(hf_settings(gguf, home))
    assert llm is not None and isinstance(llm.backend, HFBackend)
    backend = llm.backend
    load_s = timed_load(backend)
    print(f"SmolLM2 GGUF: converted in {backend.conversion_s:.1f}s, ready in {load_s:.1f}s")
    return Converted(gguf, home, backend, load_s)
