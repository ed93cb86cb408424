"""biorag against llama-cpp-python's OpenAI-compatible server (``python -m llama_cpp.server``),
the other llama.cpp server users meet, with SmolLM2-135M-Instruct, through the CLI.

It answers structured output its own way (a schema only inside ``response_format`` of type
``json_object``; ``json_schema`` is HTTP 500, a validation error), reports no context window,
counts tokens at ``/extras/tokenize/count`` and has no ``/metrics``. What is checked, with only
the server and the model named:
- biorag knows the server (by its counter) and asks for JSON in its form from the first call:
  JSON-heavy methods answer (default settings but half the token budgets), no request fails,
  the server logs no 500;
- the window it does not report is learned from its first refusal, and the question is answered
  with the lowest-ranked passages dropped (listed in the answer's trace);
- a configured window too small for even one passage is one line naming ``llm.context_window``
  (no traceback);
- with ``llm.stop_loops = "on"`` answers are streamed, the same as unstreamed, with estimated
  counts that match its usage (SmolLM2 does not loop under this server's default repeat
  penalty, so the closing of a looping stream is tested on llama-server and by fault injection).

The server is installed by ``scripts/build-llama-cpp-python.sh`` over llama-server's libraries,
once per machine; without it these tests skip and say why.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from devkit.servers import LlamaCppPythonServer, llama_cpp_python, running
from tests.real_llm.conftest import OPTIONS, biorag, demo_questions, llm_env

pytestmark = pytest.mark.real_llm

WINDOW = 4096
SMALL_WINDOW = 768


@pytest.fixture(scope="session")
def lcp_python() -> Path:
    python, why = llama_cpp_python()
    if python is None:
        pytest.skip(why)
    return python


def _server(python: Path, smol_gguf: Path, tmp: Path, ctx: int) -> Iterator[LlamaCppPythonServer]:
    yield from running(
        LlamaCppPythonServer(python, smol_gguf, ctx=ctx, log_path=tmp / "server.log")
    )


@pytest.fixture(scope="module")
def lcp(
    lcp_python: Path, smol_gguf: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[LlamaCppPythonServer]:
    yield from _server(lcp_python, smol_gguf, tmp_path_factory.mktemp("lcp"), WINDOW)


@pytest.fixture(scope="module")
def lcp_small(
    lcp_python: Path, smol_gguf: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[LlamaCppPythonServer]:
    yield from _server(lcp_python, smol_gguf, tmp_path_factory.mktemp("lcp_small"), SMALL_WINDOW)


def _ask(server: LlamaCppPythonServer, index: Path, home: Path, method: list[str], **env: str):
    q = demo_questions(1)[0]
    args = ["ask", "--index", str(index), "--method", *method,
            "--options", json.dumps(OPTIONS), "--json", q["question"]]  # fmt: skip
    return biorag(args, llm_env(server.url, home, BIORAG_LLM_CACHE="false", **env), timeout=1800)


@pytest.mark.parametrize(
    "method",
    # batched CLAIMS on one chunk: every stage's schema (claims with triples, judgements,
    # summaries, the answer) once; on three it took 2.6 minutes on this one-slot server
    [
        ["retrieve-read"],
        ["claims", "--mode", "batched", "--method-options", '{"per_corpus_k": 1}'],
        ["selfrag"],
    ],
    ids=["retrieve-read", "claims-batched", "selfrag"],
)
def test_json_methods_answer_in_its_json_form(
    lcp: LlamaCppPythonServer, demo_index: Path, tmp_path: Path, method: list[str]
) -> None:
    home = tmp_path / "home"
    # half of each stage's budget: the server's JSON form over every stage is the point, and
    # SmolLM2 fills the budget it gets (batched CLAIMS took 3 minutes at full budgets)
    r = _ask(lcp, demo_index, home, method, BIORAG_LLM_BUDGET_SCALE="0.5")
    assert r["rc"] == 0, r["stderr"][-3000:]
    out = r["json"]
    assert out["answer"] in OPTIONS, out
    total = out["accounting"]["total"]
    assert total["calls"] > 0 and total["failures"] == 0, out["accounting"]
    assert total["prompt_tokens"] > 0 and total["completion_tokens"] > 0  # the server's usage
    # Known by its token counter; asked in its own JSON form from the first call on.
    (entry,) = json.loads((home / "llm_servers.json").read_text()).values()
    assert (entry["kind"], entry["form"]) == ("llama-cpp-python", "json_object_schema"), entry
    assert " 500 " not in (lcp.log_path.read_text() if lcp.log_path else "")


def test_its_unreported_window_is_learned_from_its_refusal(
    lcp_small: LlamaCppPythonServer, demo_index: Path, tmp_path: Path
) -> None:
    r = _ask(lcp_small, demo_index, tmp_path / "home", ["retrieve-read"])
    assert r["rc"] == 0, r["stderr"][-3000:]
    assert f"over its {SMALL_WINDOW}-token context window" in r["stderr"]
    out = r["json"]
    assert out["answer"] in OPTIONS, out
    fits = out["details"]["context_fit"]
    assert fits and all(f["window"] == SMALL_WINDOW for f in fits), fits
    assert any(f["dropped"] for f in fits), fits  # passages were dropped, and said


def test_a_window_too_small_for_one_passage_is_one_clear_line(
    lcp_small: LlamaCppPythonServer, demo_index: Path, tmp_path: Path
) -> None:
    r = _ask(
        lcp_small, demo_index, tmp_path / "home", ["retrieve-read"],
        BIORAG_LLM_CONTEXT_WINDOW="256",
    )  # fmt: skip
    assert r["rc"] == 2, r
    assert "Traceback" not in r["stderr"]
    last = [x for x in r["stderr"].strip().splitlines() if x.strip()][-1]
    assert "too small for even one passage" in last and "llm.context_window" in last, last


async def test_streamed_when_asked_with_counts_that_match_its_usage(
    lcp: LlamaCppPythonServer, tmp_path: Path
) -> None:
    """``llm.stop_loops = "on"`` streams llama-cpp-python's answers too (``auto`` does not: its
    stream carries no token counts). The streamed answer is the unstreamed one, and its
    estimated completion count (one per streamed piece) equals the server's own usage."""
    from biorag.config import Settings
    from biorag.llm import ChatRequest, build_llm

    schema = {
        "type": "object",
        "properties": {"claims": {"type": "array", "items": {"type": "string"}}},
        "required": ["claims"],
    }
    question = demo_questions(1)[0]["question"]
    out = {}
    for mode in ("off", "on"):
        llm = build_llm(
            Settings.model_validate(
                {
                    "home": str(tmp_path / mode),
                    "llm": {"backend": "openai", "base_url": lcp.url, "model": "smollm2-135m",
                            "cache": False, "stop_loops": mode},
                }
            )
        )  # fmt: skip
        assert llm is not None
        out[mode] = await llm.chat(
            ChatRequest(
                messages=[{"role": "user", "content": f"List the claims of: {question}"}],
                json_schema=schema, max_tokens=300, temperature=0.0, stage="claims",
            )
        )  # fmt: skip
        await llm.aclose()
    off, on = out["off"], out["on"]
    assert not off.tokens_estimated and on.tokens_estimated
    assert on.text == off.text and on.parsed == off.parsed and on.parse_error is None
    assert on.completion_tokens == off.completion_tokens > 0
    assert on.prompt_tokens > 0
