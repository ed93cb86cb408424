"""Every door carries a verdict for each answer sentence: ``biorag ask`` (JSON and text), the
Python API, ``POST /v1/ask``, ``/v1/chat/completions`` (whole and streamed), eval in this
process (``predictions.jsonl`` and the citation metrics of ``metrics.json`` and ``report.md``)
and eval's executor worker. The model is scripted (mock backend): it writes one sentence its
cited passage states, one it does not, and one that two passages state only together, so the
unsupported sentence must be marked everywhere and the joint one named with its two passages.
The index holds four short abstracts embedded with the bundled MiniLM."""

from __future__ import annotations

import asyncio
import json
from types import SimpleNamespace
from typing import Any

import httpx
import pytest
from typer.testing import CliRunner

from biorag import BioRAG
from biorag.cli.main import app
from biorag.config import Settings
from biorag.corpus.datasets.base import QAItem
from biorag.eval.report.writer import write_report
from biorag.eval.run.on_executor import AnswerWorker
from biorag.eval.run.runner import run_eval

QUESTION = "How does metformin act in type 2 diabetes?"
SUPPORTED = "Metformin reduces hepatic glucose production in patients with type 2 diabetes [1]."
UNSUPPORTED = "Metformin also cures alopecia in every adolescent [1]."
# half from the metformin abstract, half from the statins one; it cites every passage
JOINT = ("Metformin reduces hepatic glucose production in type 2 diabetes, and atorvastatin "
         "lowers LDL cholesterol in adults with hypercholesterolemia [1][2][3][4].")  # fmt: skip
EXPECTED = ["supported", "not_supported", "supported"]
TOGETHER = {"1001", "1002"}  # the abstracts the joint sentence's two passages come from


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    from tests.conftest import DOCS

    root = tmp_path_factory.mktemp("doors")
    corpus = root / "corpus.jsonl"
    corpus.write_text("".join(json.dumps(d) + "\n" for d in DOCS), encoding="utf-8")
    script = root / "script.json"
    script.write_text(json.dumps([{"stage": "answer",
                                   "response": f"{SUPPORTED} {UNSUPPORTED} {JOINT}"}]))  # fmt: skip
    llm = {"backend": "mock", "mock_script": str(script), "cache": False}
    settings = Settings.model_validate({"home": str(root / "home"), "llm": llm,
                                        "answer": {"verifier": "rules"}})  # fmt: skip
    with BioRAG(root / "idx", settings=settings) as rag:
        rag.add([corpus])
    env = {"BIORAG_HOME": settings.home, "BIORAG_LLM_BACKEND": "mock",
           "BIORAG_LLM_MOCK_SCRIPT": str(script), "BIORAG_LLM_CACHE": "false",
           "BIORAG_ANSWER_VERIFIER": "rules"}  # fmt: skip
    return {"root": root, "index": root / "idx", "settings": settings, "env": env}


def _labels(answer: dict[str, Any]) -> list[str]:
    """The sentences' labels, after checking that only the third is supported jointly, by the
    passages of the metformin and statins abstracts."""
    joints = [s["support"].get("joint") for s in answer["sentences"]]
    assert joints[:2] == [None, None] and joints[2] is not None, joints
    source = {e["chunk_id"]: e["source_id"] for e in answer["evidence"] if e.get("chunk_id")}
    assert {source[c] for c in joints[2]["passage_ids"]} == TOGETHER
    return [s["support"]["label"] for s in answer["sentences"]]


def test_cli_ask(world, monkeypatch):
    for k, v in world["env"].items():
        monkeypatch.setenv(k, v)
    r = CliRunner().invoke(app, ["ask", "--index", str(world["index"]), "--json", QUESTION])
    assert r.exit_code == 0, r.output
    ans = json.loads(r.stdout)
    assert _labels(ans) == EXPECTED and ans["verification"]["verifier"] == "rules"
    r = CliRunner().invoke(app, ["ask", "--index", str(world["index"]), QUESTION])
    assert r.exit_code == 0, r.output
    assert "(unsupported)" in r.stdout and "support: not supported" in r.stdout
    assert 'support: supported; [1] supported "Metformin reduces' in r.stdout
    assert "support: supported (only by [" in r.stdout and "] together);" in r.stdout


def test_python_api(world):
    with BioRAG(world["index"], settings=world["settings"]) as rag:
        ans = rag.ask(QUESTION)
    assert _labels(ans.model_dump()) == EXPECTED
    span = ans.sentences[0].support.verdicts[0].span
    assert span is not None and ans.evidence[0].text[span.start : span.end] == span.text


def test_service_ask_and_chat(world):
    pytest.importorskip("fastapi")
    from biorag.serve.app import ServerConfig, create_app

    async def go() -> None:
        served = create_app(world["settings"], ServerConfig(index_paths=[world["index"]]))
        transport = httpx.ASGITransport(app=served, raise_app_exceptions=False)
        async with httpx.AsyncClient(transport=transport, base_url="http://t") as c:
            r = await c.post("/v1/ask", json={"question": QUESTION})
            assert r.status_code == 200, r.text
            assert _labels(r.json()) == EXPECTED
            body = {"model": "retrieve-read", "messages": [{"role": "user", "content": QUESTION}]}
            r = await c.post("/v1/chat/completions", json=body)
            assert r.status_code == 200, r.text
            chat = r.json()
            text = chat["choices"][0]["message"]["content"]
            assert "alopecia in every adolescent. [1] (unsupported)" in text
            assert "[1] " in text.split("Sources:")[1] and "does not support sentence 2" in text
            assert [s["label"] for s in chat["support"]["sentences"]] == EXPECTED
            assert chat["support"]["sentences"][0]["sources"][0]["n"] == 1
            joint = chat["support"]["sentences"][2]["joint"]
            assert joint["label"] == "supported" and len(joint["sources"]) == 2
            assert "supports together with [" in text.split("Sources:")[1]
            r = await c.post("/v1/chat/completions", json={**body, "stream": True})
            events = [json.loads(line[6:]) for line in r.text.splitlines()
                      if line.startswith("data: {")]  # fmt: skip
            last = events[-1]
            assert [s["label"] for s in last["support"]["sentences"]] == EXPECTED
            assert last["support"]["sentences"][2]["joint"] == joint
            streamed = "".join(e["choices"][0]["delta"].get("content", "") for e in events)
            assert "(unsupported)" in streamed
        served.state.runtime.close()

    asyncio.run(go())


def _item() -> QAItem:
    return QAItem(id="q1", dataset="toy", question=QUESTION, question_type="summary",
                  gold="Metformin lowers hepatic glucose output.",
                  meta={"ideal_answer": "Metformin lowers hepatic glucose output."})  # fmt: skip


def test_eval_records_and_citation_metrics(world):
    out = world["root"] / "run"

    def loader(name: str, path: Any, **kw: Any) -> Any:
        return SimpleNamespace(items=[_item()], skipped=[], info={"n": 1})

    run_eval(world["settings"], "toy", world["root"], methods=["retrieve-read"], out_dir=out,
             index_paths=[world["index"]], loader=loader, judge="off")  # fmt: skip
    (rec,) = [json.loads(x) for x in (out / "predictions.jsonl").read_text().splitlines()]
    assert [s["support"]["label"] for s in rec["cited_sentences"]] == EXPECTED
    assert rec["cited_sentences"][2]["support"]["joint"]["label"] == "supported"
    assert rec["verification"]["verifier"] == "rules"
    metrics = json.loads((out / "metrics.json").read_text())
    cites = metrics["methods"]["retrieve-read"]["citations"]
    # 2 of 3 sentences supported (one jointly); of 6 citations, the first sentence's and the
    # joint one's two are needed
    assert (cites["sentences"], cites["jointly_supported"], cites["citations"]) == (3, 1, 6)
    assert (cites["recall"], cites["precision"]) == (2 / 3, 0.5)
    assert cites["verifiers"] == {"rules": 1}
    report = write_report(out).read_text()
    assert "## Citation quality" in report and "| 0.667 | 0.500 |" in report


def test_eval_worker(world):
    settings = world["settings"]
    worker = AnswerWorker(settings.model_dump(mode="json"), [str(world["index"])], {}, 1)
    (rec,) = worker([json.dumps({"method": "retrieve-read", "item": _item().model_dump()})])
    rec = json.loads(rec)
    assert rec["error"] is None, rec["error"]
    assert [s["support"]["label"] for s in rec["cited_sentences"]] == EXPECTED
    assert rec["cited_sentences"][2]["support"]["joint"]["label"] == "supported"
    worker.loop.run_until_complete(worker.base.aclose())
    worker.loop.close()


def test_a_bad_verifier_setting_is_one_line(world, monkeypatch):
    for k, v in world["env"].items():
        monkeypatch.setenv(k, v)
    monkeypatch.setenv("BIORAG_LLM_BACKEND", "none")
    monkeypatch.setenv("BIORAG_ANSWER_VERIFIER", "llm")
    r = CliRunner().invoke(app, ["ask", "--index", str(world["index"]), QUESTION])
    assert r.exit_code == 2 and 'answer.verifier = "llm" needs a model' in r.output
    assert "Traceback" not in r.output
