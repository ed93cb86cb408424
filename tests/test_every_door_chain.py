"""Every door answers through :func:`biorag.asking.ask`'s road with the same LLM client chain:
the CLI, the Python API, ``/v1/ask``, ``/v1/chat/completions``, eval in this process, eval's
executor worker (the class Ray actors run, called here in process) and ``eval components``;
the judge's client is composed the same way. Each door's answering client is recorded where the
one road makes it (``Runtime.for_question``); the test fails if any door's chain differs or a
door answers without passing there. The dry-run mock model answers every prompt."""

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
from biorag.eval.judging.judge_run import open_judge
from biorag.eval.run.on_executor import AnswerWorker
from biorag.eval.run.runner import run_eval
from biorag.llm.accounting import Accounting
from biorag.runtime import Runtime

LLM = {"backend": "mock", "mock_script": "dry-run", "cache": True}
QUESTION = "Does metformin lower blood glucose?"
OPTIONS = {"A": "yes", "B": "no"}
#: the mock model has no context window, so no fit layer (a server's: tests/llm/test_llm_one_wiring)
EXPECTED = [
    "CacheMiddleware",
    "RetryMiddleware",
    "ConcurrencyLimit",
    "AccountingMiddleware",
    "ConcurrencyLimit",  # the limit all clients of the one shared model go through
    "MockBackend",
]


@pytest.fixture
def chains(monkeypatch: pytest.MonkeyPatch) -> dict[str, list[list[str]]]:
    """Each door's answering clients' chains, recorded where the one road makes them."""
    seen: dict[str, list[list[str]]] = {}
    door = {"name": ""}
    made = Runtime.for_question

    def recording(self: Runtime, accounting: Accounting, exclusion: Any = None) -> Runtime:
        child = made(self, accounting, exclusion)
        assert child.llm is not None
        seen.setdefault(door["name"], []).append(child.llm.chain_names())
        return child

    monkeypatch.setattr(Runtime, "for_question", recording)
    seen["_door"] = door  # type: ignore[assignment]
    return seen


def _settings(tmp_path: Any) -> Settings:
    return Settings.model_validate({"home": str(tmp_path / "home"), "llm": LLM})


def _item() -> QAItem:
    return QAItem(id="q1", dataset="toy", question=QUESTION, options=OPTIONS, gold="A")


def _door(chains: dict[str, Any], name: str) -> None:
    chains["_door"]["name"] = name


async def _service(settings: Settings, chains: dict[str, Any]) -> None:
    pytest.importorskip("fastapi")
    from biorag.serve.app import ServerConfig, create_app

    served = create_app(settings, ServerConfig())
    transport = httpx.ASGITransport(app=served, raise_app_exceptions=False)
    async with httpx.AsyncClient(transport=transport, base_url="http://t") as c:
        _door(chains, "service /v1/ask")
        body = {"question": QUESTION, "options": OPTIONS, "method": "closed-book"}
        r = await c.post("/v1/ask", json=body)
        assert r.status_code == 200, r.text
        _door(chains, "service /v1/chat/completions")
        body = {"model": "closed-book", "messages": [{"role": "user", "content": QUESTION}]}
        r = await c.post("/v1/chat/completions", json=body)
        assert r.status_code == 200, r.text
    served.state.runtime.close()


def test_every_door_gets_the_same_chain(tmp_path, monkeypatch, chains):
    settings = _settings(tmp_path)
    # the CLI
    monkeypatch.setenv("BIORAG_HOME", settings.home)
    for key, value in LLM.items():
        monkeypatch.setenv(f"BIORAG_LLM_{key.upper()}", str(value).lower())
    _door(chains, "cli ask")
    r = CliRunner().invoke(app, ["ask", "--method", "closed-book", "--options",
                                 json.dumps(OPTIONS), "--json", QUESTION])  # fmt: skip
    assert r.exit_code == 0, r.output
    # the Python API
    _door(chains, "api")
    with BioRAG(tmp_path / "no-index", settings=settings) as rag:
        assert rag.ask(QUESTION, OPTIONS, method="closed-book").answer in OPTIONS
    # the service: ask and chat
    asyncio.run(_service(settings, chains))
    # eval, in this process
    _door(chains, "eval")

    def loader(name: str, path: Any, **kw: Any) -> Any:
        return SimpleNamespace(items=[_item()], skipped=[], info={"n": 1})

    run_eval(settings, "toy", tmp_path, methods=["closed-book"], out_dir=tmp_path / "run",
             loader=loader)  # fmt: skip
    # eval on the executor: the worker a Ray actor runs, here in process
    _door(chains, "eval worker")
    worker = AnswerWorker(settings.model_dump(mode="json"), [], {}, 1)
    (rec,) = worker([json.dumps({"method": "closed-book", "item": _item().model_dump()})])
    assert json.loads(rec)["error"] is None
    worker.loop.run_until_complete(worker.base.aclose())
    worker.loop.close()

    del chains["_door"]
    doors = {"cli ask", "api", "service /v1/ask", "service /v1/chat/completions", "eval",
             "eval worker"}  # fmt: skip
    assert set(chains) == doors, chains.keys()
    for door, seen in chains.items():
        assert seen and all(c == EXPECTED for c in seen), (door, seen)


def test_the_judge_client_is_composed_the_same_way(tmp_path):
    settings = _settings(tmp_path)
    item = _item().model_copy(update={"meta": {"ideal_answer": "Yes, it does."}})
    judge, note = open_judge(settings, [item], "on")
    assert judge is not None, note
    client = judge.shared.client(Accounting())
    assert client is not None and client.chain_names() == EXPECTED
    asyncio.run(judge.aclose())
