"""Every method end to end against a real llama-server with SmolLM2-135M-Instruct, default
settings (only the server and the model named) but three passages a question instead of ten,
as a user runs them: through the CLI.

Three long passages (PubMedQA abstracts) still take every path a method has (several passages
to rank, extract from, summarize and fit); ten made the claim method alone run for 14 minutes
on two busy cores, most of the suite's time, without proving more.

What is checked: every question gets an answer (the fallback counts, and is counted), no
request fails, token counts equal what the server reports on ``/metrics``, parse failures and
repetition cuts are counted per stage, ``wall_s`` is measured.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from devkit.servers import LlamaServer
from tests.real_llm.conftest import OPTIONS, biorag, demo_questions, llm_env

pytestmark = pytest.mark.real_llm

METHODS = [
    ("closed-book", []),
    ("retrieve-read", []),
    ("rewrite", []),
    ("hyde", []),
    ("raptor", []),
    ("claim", []),
    ("claims", ["--mode", "faithful"]),
    ("claims", ["--mode", "batched"]),
    ("iprar", []),
    ("crag", []),
    ("selfrag", []),
]


def _check_accounting(acc: dict[str, Any]) -> None:
    total = acc["total"]
    assert total["calls"] > 0
    assert total["failures"] == 0, acc
    assert acc["wall_s"] > 0
    for stage in acc["stages"].values():
        assert {"parse_failures", "attempt_errors", "cache_hits"} <= set(stage)


#: tokens llama-server may generate past the last chunk read of a stream closed at a loop (2
#: on an idle machine, more when the reader lags behind the server under load)
LOOP_SLACK = 48


@pytest.mark.parametrize(("method", "extra"), METHODS, ids=[m + "".join(e) for m, e in METHODS])
def test_every_method_answers_on_llama_server(
    llama: LlamaServer, demo_index: Path, tmp_path: Path, method: str, extra: list[str]
) -> None:
    q = demo_questions(1)[0]
    env = llm_env(llama.url, tmp_path / "home", BIORAG_LLM_CACHE="false", BIORAG_RETRIEVAL_K="3")
    before = llama.settled_metrics()
    r = biorag(
        [
            "ask",
            "--index",
            str(demo_index),
            "--method",
            method,
            *extra,
            "--options",
            json.dumps(OPTIONS),
            "--json",
            q["question"],
        ],
        env,
        timeout=1800,
    )
    assert r["rc"] == 0, r["stderr"][-3000:]
    out = r["json"]
    assert out["answer"] in OPTIONS, out
    acc = out["accounting"]
    _check_accounting(acc)
    after = llama.settled_metrics()
    # Token counts are the server's own: what it generated equals what biorag counted, but for
    # a few tokens per stream closed at a loop, generated after the last counted chunk.
    generated = after["tokens_predicted_total"] - before["tokens_predicted_total"]
    counted, stopped = acc["total"]["completion_tokens"], acc["total"]["loops_stopped"]
    assert counted <= generated <= counted + LOOP_SLACK * stopped
    assert "Context size" not in r["stderr"] and "exceed" not in r["stderr"]


def test_vectorgraphrag_with_an_llm_built_kg(llama: LlamaServer, tmp_path: Path) -> None:
    env = llm_env(llama.url, tmp_path / "home")
    qa = tmp_path / "qa.jsonl"
    rows = [
        {"question": q["question"], "answer": q["options"][q["gold"]]} for q in demo_questions(4)
    ]
    qa.write_text("".join(json.dumps(x) + "\n" for x in rows), encoding="utf-8")
    kg = tmp_path / "kg"
    built = biorag(
        ["kg", "build", "--from", str(qa), "--format", "jsonl", "--out", str(kg), "--json"], env
    )
    assert built["rc"] == 0, built["stderr"][-3000:]
    report = built["json"]
    assert report["accounting"]["total"]["calls"] > 0
    q = demo_questions(1)[0]
    r = biorag(
        [
            "ask",
            "--kg",
            str(kg),
            "--method",
            "vectorgraphrag",
            "--options",
            json.dumps(OPTIONS),
            "--json",
            q["question"],
        ],
        env,
    )
    assert r["rc"] == 0, r["stderr"][-3000:]
    assert r["json"]["answer"] in OPTIONS


def test_strata_build_with_llm_extraction_reports_its_yield(
    llama: LlamaServer, tmp_path: Path
) -> None:
    from tests.real_llm.conftest import DEMO

    papers = tmp_path / "papers.jsonl"
    # two papers: each is its own extraction call (five took 69 s and proved no more)
    rows = [json.loads(x) for x in (DEMO / "pubmedqa_sample.jsonl").read_text().splitlines()[:2]]
    papers.write_text(
        "".join(
            json.dumps({"pid": r["id"], "title": r.get("title") or "", "abstract": r["text"]})
            + "\n"
            for r in rows
        ),
        encoding="utf-8",
    )
    env = llm_env(llama.url, tmp_path / "home")
    r = biorag(
        ["strata", "build", "--papers", str(papers), "--out", str(tmp_path / "s"), "--json"], env
    )
    assert r["rc"] == 0, r["stderr"][-3000:]
    report = r["json"]
    assert report["accounting"]["total"]["calls"] >= 2
    assert report["accounting"]["wall_s"] > 0
