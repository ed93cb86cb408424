"""Fixtures of the real-model tests: SmolLM2-135M-Instruct behind a real llama-server.

Every test here is marked ``real_llm``. Where the server binary or the model is missing the
tests skip with the reason (pytest prints it: ``-ra``); ``make test`` builds the server first.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from devkit.servers import LlamaServer, llama_server_binary, running
from devkit.smollm2 import SMOLLM2_INSTALL, smollm2_gguf_path
from tests.demo_data import DEMO, OPTIONS, demo_questions, write_pqal  # noqa: F401 - shared


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if "real_llm" in str(item.fspath):
            item.add_marker(pytest.mark.real_llm)


@pytest.fixture(scope="session")
def smol_gguf() -> Path:
    path = smollm2_gguf_path()
    if path is None:
        pytest.skip(f"SmolLM2 GGUF not installed: {SMOLLM2_INSTALL}")
    return path


@pytest.fixture(scope="session")
def llama_bin() -> Path:
    path, why = llama_server_binary()
    if path is None:
        pytest.skip(why)
    return path


@pytest.fixture(scope="session")
def llama(
    llama_bin: Path, smol_gguf: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[LlamaServer]:
    log = tmp_path_factory.mktemp("llama") / "server.log"
    yield from running(LlamaServer(llama_bin, smol_gguf, ctx=8192, parallel=2, log_path=log))


def biorag(args: list[str], env: dict[str, str], timeout: float = 900) -> dict[str, Any]:
    """Run the ``biorag`` CLI; returns ``{"rc", "stdout", "stderr", "json"}``."""
    r = subprocess.run(
        [sys.executable, "-m", "biorag.cli.main", *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=timeout,
        check=False,
    )
    parsed = None
    if "--json" in args and r.returncode == 0:
        parsed = json.loads(r.stdout)
    return {"rc": r.returncode, "stdout": r.stdout, "stderr": r.stderr, "json": parsed}


def llm_env(base_url: str, home: Path, **extra: str) -> dict[str, str]:
    """The environment of a user who set only the server and the model (default settings)."""
    env = {
        k: v for k, v in os.environ.items() if not k.startswith("BIORAG_") or k == "BIORAG_PROGRESS"
    }
    env.update(
        BIORAG_HOME=str(home),
        BIORAG_LLM_BACKEND="openai",
        BIORAG_LLM_BASE_URL=base_url,
        BIORAG_LLM_MODEL="smollm2-135m",
        BIORAG_PROGRESS="0",
        **extra,
    )
    return env


@pytest.fixture(scope="session")
def demo_index(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The first 40 bundled PubMedQA abstracts, indexed with the real MiniLM embedder."""
    root = tmp_path_factory.mktemp("real_index")
    corpus = root / "corpus.jsonl"
    lines = (DEMO / "pubmedqa_sample.jsonl").read_text(encoding="utf-8").splitlines()[:40]
    corpus.write_text("\n".join(lines) + "\n", encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if not k.startswith("BIORAG_")}
    env.update(BIORAG_HOME=str(root / "home"), BIORAG_PROGRESS="0")
    out = root / "idx"
    r = biorag(["index", "build", "--corpus", str(corpus), "--out", str(out)], env)
    assert r["rc"] == 0, r["stderr"]
    return out
