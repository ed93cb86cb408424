"""Evaluation runs through the HTTP API: start, follow, metrics, report, answers, compare; bad
requests refused; a run a stopped server left is resumed by the next one."""

from __future__ import annotations

import asyncio
import json
import time

import httpx
import pytest

pytest.importorskip("fastapi")

from biorag.config import Settings
from biorag.runtime import Runtime
from biorag.serve.app import ServerConfig, create_app
from biorag.serve.runs import STATE_FILE, RunManager

DOCS = [
    {"id": "100", "text": "Drug 0 lowered blood pressure in a randomized trial."},
    {"id": "101", "text": "Drug 1 did not lower blood pressure in adults."},
]


@pytest.fixture
def datasets(tmp_path):
    folder = tmp_path / "datasets"
    folder.mkdir()
    recs = {
        str(100 + i): {
            "QUESTION": f"Does drug {i} lower blood pressure?",
            "CONTEXTS": [f"Drug {i} lowered blood pressure in a trial."],
            "LABELS": ["RESULTS"], "MESHES": [], "YEAR": "2020", "LONG_ANSWER": "It does.",
            "final_decision": ["yes", "no", "maybe"][i % 3],
        }
        for i in range(4)
    }  # fmt: skip
    (folder / "ori_pqal.json").write_text(json.dumps(recs))
    return folder


def client_for(tmp_path, hash_embedder, index, **config):
    settings = Settings(home=str(tmp_path / "home"))
    rt = Runtime(settings, [index], embedder=hash_embedder)
    app = create_app(settings, ServerConfig(index_paths=[index], **config), runtime=rt)
    return httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://t"), app


async def finished(c: httpx.AsyncClient, name: str) -> dict:
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        run = (await c.get(f"/v1/runs/{name}")).json()
        if run["status"] in ("done", "failed"):
            return run
        await asyncio.sleep(0.1)
    raise AssertionError(f"run {name} did not finish: {run}")


RUN = {"dataset": "pubmedqa", "data": "ori_pqal.json", "setting": "reasoning-required"}


async def test_start_follow_read_and_compare_runs(tmp_path, hash_embedder, index_of, datasets):
    c, app = client_for(tmp_path, hash_embedder, index_of(DOCS, "toy"), datasets_dir=datasets)
    async with c:
        r = await c.post("/v1/runs", json={**RUN, "name": "r1",
                                           "methods": ["retrieve-read", "claims"]})  # fmt: skip
        assert r.status_code == 202 and r.json()["status"] == "queued", r.text
        run = await finished(c, "r1")
        assert run["status"] == "done", run
        assert run["total"] == 8 and run["done"] == 8  # 4 questions x 2 methods
        assert set(run["scores"]) == {"retrieve-read", "claims"}
        assert 0.0 <= run["scores"]["claims"]["accuracy"] <= 1.0
        assert "retrieve-read" in run["report"] and run["metrics"]["dataset"] == "pubmedqa"
        answers = (await c.get("/v1/runs/r1/answers", params={"method": "claims"})).json()
        assert answers["total"] == 4 and {a["gold"] for a in answers["answers"]} <= {"A", "B", "C"}
        assert all(a["method"] == "claims" and a["error"] is None for a in answers["answers"])
        await c.post("/v1/runs", json={**RUN, "name": "r2", "methods": ["claims"], "limit": 2})
        assert (await finished(c, "r2"))["status"] == "done"
        listed = (await c.get("/v1/runs")).json()["runs"]
        assert [x["name"] for x in listed] == ["r1", "r2"] and "report" not in listed[0]
        cmp = (await c.get("/v1/runs/compare", params={"a": "r1", "b": "r2"})).json()
        assert cmp["methods"]["retrieve-read"]["b"] is None
        assert set(cmp["methods"]["claims"]) == {"a", "b"}
    app.state.runs.stop()


async def test_bad_run_requests_are_4xx(tmp_path, hash_embedder, index_of, datasets):
    c, app = client_for(tmp_path, hash_embedder, index_of(DOCS, "toy"), datasets_dir=datasets)
    ok = {**RUN, "name": "fine", "methods": ["claims"], "limit": 1}
    async with c:
        assert (await c.post("/v1/runs", json=ok)).status_code == 202
        cases = [
            (await c.post("/v1/runs", json={**ok, "name": "../up"}), 422, "run name"),
            (await c.post("/v1/runs", json={**ok, "name": "x", "data": "../../etc/passwd"}),
             400, "no dataset"),
            (await c.post("/v1/runs", json={**ok, "name": "x", "dataset": "nope"}), 400,
             "unknown dataset"),
            (await c.post("/v1/runs", json={**ok, "name": "x", "methods": ["magic"]}), 400,
             "unknown methods"),
            (await c.post("/v1/runs", json={**ok, "limit": 10**6}), 422, "limit"),
            (await c.post("/v1/runs", json=ok), 400, "exists"),
            (await c.get("/v1/runs/nope"), 404, "no run"),
            (await c.post("/v1/runs", json={**ok, "name": "y", "data": "a\x00b"}), 400,
             "no dataset"),
            (await c.post("/v1/runs", json={**ok, "name": "compare"}), 422, "compare"),
            (await c.get("/v1/runs/..%2F..%2Fetc"), 404, ""),
        ]  # fmt: skip
        for r, status, words in cases:
            assert r.status_code == status, (r.status_code, r.text)
            assert words in r.json()["error"]["message"] and "Traceback" not in r.text
        await finished(c, "fine")
        (tmp_path / "home" / "serve" / "runs" / "stray folder").mkdir()
        assert [r["name"] for r in (await c.get("/v1/runs")).json()["runs"]] == ["fine"]
    app.state.runs.stop()
    c2, _ = client_for(tmp_path / "b", hash_embedder, index_of(DOCS, "toy"))
    async with c2:
        r = await c2.post("/v1/runs", json=ok)
        assert r.status_code == 404 and "--datasets DIR" in r.json()["error"]["message"]


def test_a_run_left_running_is_resumed_by_the_next_server(
    tmp_path, hash_embedder, index_of, datasets
):
    index = index_of(DOCS, "toy")
    settings = Settings(home=str(tmp_path / "home"))
    root = tmp_path / "runs"
    (root / "left").mkdir(parents=True)
    state = {**RUN, "name": "left", "methods": ["claims"], "limit": 4, "status": "running",
             "created_at": 1.0, "resumed": 0}  # fmt: skip
    (root / "left" / STATE_FILE).write_text(json.dumps(state))
    with Runtime(settings, [index], embedder=hash_embedder) as rt:
        runs = RunManager(root, datasets, rt, settings)
        runs.start()
        deadline = time.monotonic() + 120
        while runs.summary("left")["status"] not in ("done", "failed"):
            assert time.monotonic() < deadline
            time.sleep(0.1)
        runs.stop()
        done = runs.summary("left")
    assert done["status"] == "done" and done["resumed"] == 1 and done["total"] == 4


def test_a_failed_runs_error_names_no_server_path(tmp_path, hash_embedder, datasets):
    settings = Settings(home=str(tmp_path / "home"))
    with Runtime(settings, [], embedder=hash_embedder) as rt:
        runs = RunManager(tmp_path / "runs", datasets, rt, settings)
        for root in (datasets, datasets.resolve()):
            said = runs._scrub(f"no PubMedQA file in {root} (looked for {root}/ori_pqal.json)")
            assert str(tmp_path) not in said
            assert said == "no PubMedQA file in the datasets folder (looked for ori_pqal.json)"
