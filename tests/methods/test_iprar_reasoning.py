"""IP-RAR's reasoning model is built once per runtime (one backend for a whole evaluation run),
its calls are counted in each question's record, and it is closed at the end: by the runner,
by ``biorag ask`` and by the facade."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import pytest
from methods_helpers import GIVEN, make_runtime

from biorag.config import Settings
from biorag.corpus.datasets.base import QAItem
from biorag.eval.run.records import read_predictions
from biorag.eval.run.runner import run_eval
from biorag.llm import factory
from biorag.llm.dry_run import dry_run_responder
from biorag.llm.mock_backend import MockBackend
from biorag.methods.iprar import IPRAR
from biorag.runtime import Runtime

R1 = {"backend": "mock", "mock_script": "dry-run", "model": "r1", "cache": False}


class ClosingMock(MockBackend):
    """A dry-run mock that counts its ``aclose`` calls."""

    def __init__(self, model: str) -> None:
        super().__init__(responder=dry_run_responder, model=model)
        self.closed = 0

    async def aclose(self) -> None:
        self.closed += 1


@pytest.fixture
def reasoning_backends(monkeypatch) -> list[ClosingMock]:
    """Every backend built for the model ``r1`` (the reasoning model), in build order."""
    built: list[ClosingMock] = []
    real = factory.make_backend

    def make_backend(settings):
        if settings.llm.model != "r1":
            return real(settings)
        built.append(ClosingMock("r1"))
        return built[-1]

    monkeypatch.setattr(factory, "make_backend", make_backend)
    return built


def loader(name, path, *, split=None, setting=None, limit=None):
    items = [
        QAItem(
            id=f"q{i}",
            dataset="toy",
            question=f"Does KRX1 drive liver fibrosis in model {i}?",
            options={"A": "yes", "B": "no"},
            gold="A",
            context=[
                f"KRX1 drives fibrosis of the liver in model {i}.",
                "Vitamin D did not change fracture risk.",
            ],
        )
        for i in range(3)
    ]
    return SimpleNamespace(items=items, skipped=[], info={})


def test_run_eval_builds_one_reasoning_backend_and_closes_it(
    tmp_path, hash_embedder, reasoning_backends
):
    from biorag.runtime import Runtime

    st = Settings.model_validate(
        {
            "home": str(tmp_path / "home"),
            "llm": {"backend": "mock", "mock_script": "dry-run", "cache": False},
        }
    )
    rt = Runtime(st, embedder=hash_embedder)
    out = tmp_path / "run"
    run_eval(
        st,
        "toy",
        tmp_path / "toy.jsonl",
        methods=["iprar"],
        method_options={"iprar": {"reasoning_model": R1}},
        out_dir=out,
        loader=loader,
        runtime=rt,
        concurrency=3,
    )
    assert len(reasoning_backends) == 1  # not one per question
    r1 = reasoning_backends[0]
    assert r1.closed == 1 and rt.open_llm_variants == 0
    recs = read_predictions(out / "predictions.jsonl")
    assert len(recs) == 3 and not any(r["error"] for r in recs)
    # The reasoning model reads the final answer (stages answer/answer_extract); those calls are
    # in each question's record, and add up to the reasoning backend's calls.
    r1_stages = {req.stage for req in r1.calls}
    assert r1_stages == {"answer", "answer_extract"}
    counted = 0
    for r in recs:
        stages = r["accounting"]["stages"]
        assert all(stages[s]["calls"] >= 1 for s in r1_stages)
        assert stages["iprar_prereason"]["calls"] == 1  # the main model's, in the same record
        counted += sum(stages[s]["calls"] for s in r1_stages)
    assert counted == len(r1.calls)


def test_runtime_shares_one_variant_per_override_set(tmp_path, hash_embedder, reasoning_backends):
    import threading

    rt = make_runtime(tmp_path, hash_embedder, llm={"backend": "mock", "mock_script": "dry-run"})
    clients: list = []

    def get() -> None:
        clients.append(rt.llm_variant(dict(R1)))

    threads = [threading.Thread(target=get) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(reasoning_backends) == 1 and len(clients) == 8
    assert all(c.accounting is rt.llm.accounting for c in clients)
    # equal after validation (explicit default) -> the same variant; another model -> another
    rt.llm_variant({**R1, "max_retries": 4})
    assert len(reasoning_backends) == 1
    rt.llm_variant({**R1, "model": "r2"})
    assert rt.open_llm_variants == 2
    rt.close()
    assert reasoning_backends[0].closed == 1 and rt.open_llm_variants == 0


def test_iprar_instances_share_the_reasoning_model(tmp_path, hash_embedder, reasoning_backends):
    rt = make_runtime(tmp_path, hash_embedder, llm={"backend": "mock", "mock_script": "dry-run"})
    q = GIVEN.model_copy(update={"id": "g2"})
    for _ in range(3):
        ans = IPRAR(rt, reasoning_model=R1).answer_sync(q)
        assert ans.answer == "A"
    assert len(reasoning_backends) == 1 and len(reasoning_backends[0].calls) >= 3
    assert rt.accounting()["stages"]["answer"]["calls"] >= 3
    rt.close()
    assert reasoning_backends[0].closed == 1


def test_ask_and_facade_close_the_reasoning_model(tmp_path, hash_embedder, reasoning_backends):
    from biorag import BioRAG
    from biorag.cli.ask_cmd import run_question

    no_hits = SimpleNamespace(search=lambda qs, k, r, level, **kw: [[]], close=lambda: None)
    rt = make_runtime(
        tmp_path, hash_embedder, llm={"backend": "mock", "mock_script": "dry-run"}, searcher=no_hits
    )
    rt.index_paths = [Path("unused")]  # iprar needs an index; the question is answered below
    ans = run_question(
        rt, "Does KRX1 drive fibrosis?", "iprar", {"A": "yes", "B": "no"}, {"reasoning_model": R1}
    )
    assert len(reasoning_backends) == 1 and reasoning_backends[0].closed == 1
    assert ans["accounting"]["stages"]["answer"]["calls"] >= 1 and json.dumps(ans)

    st = Settings.model_validate(
        {"home": str(tmp_path / "home2"), "llm": {"backend": "mock", "mock_script": "dry-run"}}
    )
    rag = BioRAG(tmp_path / "idx", runtime=Runtime(st, embedder=hash_embedder, searcher=no_hits))
    for _ in range(2):  # two questions, one reasoning model
        rag.ask("Does KRX1 drive fibrosis?", {"A": "yes", "B": "no"}, "iprar", reasoning_model=R1)
    assert len(reasoning_backends) == 2 and reasoning_backends[1].closed == 0
    rag.close()
    assert reasoning_backends[1].closed == 1
