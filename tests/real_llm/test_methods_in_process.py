"""SmolLM2-135M-Instruct in process (``llm.backend = "hf"`` on the GGUF file), through the CLI, as
a user without a server runs it.

One method through the CLI door: what the in-process backend adds to a method (generation,
JSON answers, token counts, the GGUF converted once into the user's home) is the same for every
method, and every method's own path runs against llama-server in
test_methods_on_llama_server.py; the backend itself (conversion, chat, a JSON schema, two
methods with both answer extractions) is tested through the API in tests/llm/test_hf_gguf.py.
(Every method in process took 9.5 of the suite's minutes, batched CLAIMS alone 2.4, and proved
nothing more.)

Default settings but two, since the model generates a few tokens a second on two shared CPU
cores: ``llm.budget_scale`` 0.25 and ``retrieval.k`` 3 (with 10 passages the claim method alone
ran over six minutes). The GGUF is converted once per session (the ``converted`` fixture); the
LLM cache is off, so every call is made. One torch thread (two ran slower on shared cores).

Checked: every question gets an answer (a fallback counts, and is counted), no call fails,
tokens are counted, parse failures are counted per stage, ``wall_s`` is measured.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from tests.real_llm.conftest import OPTIONS, biorag, demo_questions
from tests.real_llm.test_methods_on_llama_server import _check_accounting

pytestmark = pytest.mark.real_llm


@pytest.fixture(scope="module")
def hf_env(converted: Any) -> dict[str, str]:
    """A user's environment for the ``hf`` backend, in the home where the session's ``converted``
    fixture converted the GGUF file (the conversion is tested in tests/llm/test_hf_gguf.py)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("BIORAG_")}
    env.update(
        BIORAG_HOME=str(converted.home),
        BIORAG_LLM_BACKEND="hf",
        BIORAG_LLM_HF_PATH=str(converted.gguf),
        BIORAG_LLM_CACHE="false",
        BIORAG_LLM_BUDGET_SCALE="0.25",
        BIORAG_RETRIEVAL_K="3",
        BIORAG_PROGRESS="0",
        OMP_NUM_THREADS="1",
    )
    return env


def test_a_method_answers_in_process(hf_env: dict[str, str], demo_index: Path) -> None:
    q = demo_questions(1)[0]
    args = ["ask", "--index", str(demo_index), "--method", "retrieve-read"]
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
