"""Every method end to end with SmolLM2-135M-Instruct in process (``llm.backend = "hf"`` on the
GGUF file), through the CLI, as a user without a server runs them.

Default settings but two, since the model generates a few tokens a second on two shared CPU
cores: ``llm.budget_scale`` 0.25 and ``retrieval.k`` 3 (with 10 passages the claim method alone
ran over six minutes; the llama-server tests run the defaults). The GGUF is converted once
into a home the runs share; the LLM cache is off, so every call is made. One torch thread (two
ran slower on shared cores).

Checked: every question gets an answer (a fallback counts, and is counted), no call fails,
tokens are counted, parse failures are counted per stage, ``wall_s`` is measured.
"""

from __future__ import annotations

import importlib.util
import json
import os
from pathlib import Path

import pytest
from tests.real_llm.conftest import OPTIONS, biorag, demo_questions
from tests.real_llm.test_methods_on_llama_server import METHODS, _check_accounting

pytestmark = pytest.mark.real_llm


@pytest.fixture(scope="module")
def hf_env(smol_gguf: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    missing = [m for m in ("gguf", "accelerate") if importlib.util.find_spec(m) is None]
    if missing:
        pytest.skip(f"{' and '.join(missing)} not installed (pip install 'biorag[gguf]')")
    env = {k: v for k, v in os.environ.items() if not k.startswith("BIORAG_")}
    env.update(
        BIORAG_HOME=str(tmp_path_factory.mktemp("hf_home")),
        BIORAG_LLM_BACKEND="hf",
        BIORAG_LLM_HF_PATH=str(smol_gguf),
        BIORAG_LLM_CACHE="false",
        BIORAG_LLM_BUDGET_SCALE="0.25",
        BIORAG_RETRIEVAL_K="3",
        BIORAG_PROGRESS="0",
        OMP_NUM_THREADS="1",
    )
    return env


@pytest.mark.parametrize(("method", "extra"), METHODS, ids=[m + "".join(e) for m, e in METHODS])
def test_every_method_answers_in_process(
    hf_env: dict[str, str], demo_index: Path, method: str, extra: list[str]
) -> None:
    q = demo_questions(1)[0]
    args = ["ask", "--index", str(demo_index), "--method", method, *extra]
    r = biorag([*args, "--options", json.dumps(OPTIONS), "--json", q["question"]], hf_env)
    assert r["rc"] == 0, r["stderr"][-3000:]
    out = r["json"]
    acc = out["accounting"]
    _check_accounting(acc)
    assert acc["total"]["completion_tokens"] > 0 and acc["total"]["prompt_tokens"] > 0
    if out.get("parse_failed"):
        assert out["answer"] == "" and out["raw_output"].strip()  # reported, never guessed
    else:
        assert out["answer"] in OPTIONS, out
