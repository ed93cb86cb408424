"""Documents and jobs of the HTTP API: upload, add as a background job with progress, remove,
bad uploads refused with nothing lost, and jobs resumed by the next server."""

from __future__ import annotations

import asyncio
import json
import time

import httpx
import pytest

pytest.importorskip("fastapi")
pytest.importorskip("multipart")

from biorag.config import Settings
from biorag.runtime import Runtime
from biorag.serve.app import ServerConfig, create_app
from biorag.serve.jobs import JOB_FILE, Job, JobManager

DOCS = [
    {"id": "1001", "text": "Vitamin D supplementation did not reduce fracture risk in adults."},
    {"id": "1002", "text": "Atorvastatin lowers LDL cholesterol and cardiovascular events."},
]
NEW = [
    {"id": "2001", "text": "Semaglutide reduced body weight in adults with obesity."},
    {"id": "2002", "text": "Tirzepatide improved glycaemic control in type 2 diabetes."},
]


def jsonl(docs: list[dict]) -> bytes:
    return "".join(json.dumps(d) + "\n" for d in docs).encode()


@pytest.fixture
def served(tmp_path, hash_embedder, index_of):
    index = index_of(DOCS, "toy")
    settings = Settings(home=str(tmp_path / "home"))
    rt = Runtime(settings, [index], embedder=hash_embedder)
    config = ServerConfig(index_paths=[index], max_upload_bytes=20_000, max_body_bytes=5_000)
    app = create_app(settings, config, runtime=rt)
    yield httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://t"), rt
    app.state.jobs.stop()
    rt.close()


async def wait_for(c: httpx.AsyncClient, job_id: str, timeout: float = 60) -> dict:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        job = (await c.get(f"/v1/jobs/{job_id}")).json()
        if job["status"] in ("done", "failed"):
            return job
        await asyncio.sleep(0.05)
    raise AssertionError(f"job {job_id} did not finish: {job}")


async def source_ids(c: httpx.AsyncClient) -> set[str]:
    listed = (await c.get("/v1/documents", params={"limit": 500})).json()
    return {d["source_id"] for d in listed["documents"]}


async def test_upload_adds_documents_in_a_job_and_search_finds_them(served):
    c, _ = served
    async with c:
        r = await c.post("/v1/documents", files={"files": ("new.jsonl", jsonl(NEW))})
        assert r.status_code == 202, r.text
        job = r.json()
        assert job["kind"] == "add" and job["index"] == "toy" and job["status"] == "queued"
        done = await wait_for(c, job["id"])
        assert done["status"] == "done", done
        assert done["report"]["documents_new"] == 2 and done["report"]["documents_total"] == 4
        assert "skipped_file" not in done["report"]  # no server paths in replies
        events = (await c.get(f"/v1/jobs/{job['id']}/events")).text
        assert events.startswith("event: job\ndata: ") and '"status": "done"' in events
        assert await source_ids(c) == {"1001", "1002", "2001", "2002"}
        hits = (await c.post("/v1/retrieve", json={"query": "semaglutide weight", "k": 1})).json()
        assert hits["passages"][0]["source_id"] == "2001"  # the new state is searched
        jobs = (await c.get("/v1/jobs")).json()["jobs"]
        assert [j["id"] for j in jobs] == [job["id"]]


async def test_reports_name_uploads_not_server_paths_and_text_files_keep_their_names(
    served, tmp_path
):
    c, _ = served
    async with c:
        mixed = jsonl(NEW[:1]) + b"{not json\n"
        note = ("note.txt", b"Aspirin thins blood.")
        files = [("files", ("mixed.jsonl", mixed)), ("files", note)]
        r = await c.post("/v1/documents", files=files)
        done = await wait_for(c, r.json()["id"])
        assert done["status"] == "done" and done["report"]["skipped"] == 1, done
        text = json.dumps(done)
        assert str(tmp_path) not in text and "mixed.jsonl:2" in text
        assert "note.txt" in await source_ids(c)  # its name, not the server's storage name
        assert (await c.delete("/v1/documents/note.txt")).status_code == 202


async def test_a_page_of_another_site_cannot_post(served):
    c, _ = served
    async with c:
        files = {"files": ("new.jsonl", jsonl(NEW))}
        evil = await c.post(
            "/v1/documents", files=files, headers={"Origin": "https://evil.example"}
        )
        assert evil.status_code == 403 and evil.json()["error"]["type"] == "forbidden"
        gone = await c.delete("/v1/documents/1001", headers={"Origin": "null"})
        assert gone.status_code == 403
        same = await c.post("/v1/documents", files=files, headers={"Origin": "http://t"})
        assert same.status_code == 202  # the page itself
        assert (
            await c.get("/v1/jobs", headers={"Origin": "https://evil.example"})
        ).status_code == 200


async def test_remove_is_a_job_and_the_document_is_gone(served):
    c, _ = served
    async with c:
        assert (await c.delete("/v1/documents/9999")).status_code == 404
        r = await c.delete("/v1/documents/1002")
        assert r.status_code == 202, r.text
        done = await wait_for(c, r.json()["id"])
        assert done["status"] == "done" and done["report"]["documents_removed"] == 1
        assert await source_ids(c) == {"1001"}
        hits = (await c.post("/v1/retrieve", json={"query": "atorvastatin LDL", "k": 5})).json()
        assert "1002" not in {p["source_id"] for p in hits["passages"]}
        assert (await c.get("/v1/documents/1002")).status_code == 404


async def test_bad_uploads_are_4xx_and_lose_nothing(served, tmp_path):
    c, _ = served
    async with c:
        not_corpus = {"files": ("notes.jsonl", b"\x00\x01 this is not json\n{broken\n")}
        cases = [
            (await c.post("/v1/documents", files=not_corpus), 400, "notes.jsonl: "),
            (await c.post("/v1/documents", files={"files": ("big.txt", b"x" * 30_000)}), 413,
             "upload limit"),
            (await c.post("/v1/documents", files={"files": ("a.jsonl", jsonl(NEW))},
                          data={"index": "../elsewhere"}), 400, "unknown index"),
            (await c.post("/v1/documents", files={"files": ("a.xml", b"<PubmedArticleSet>")},
                          data={"format": "pubmed_xml"}), 400, ""),
            (await c.post("/v1/documents"), 422, "files"),
            (await c.get("/v1/jobs/../../etc"), 404, ""),
        ]  # fmt: skip
        for r, status, words in cases:
            assert r.status_code == status, (r.status_code, r.text)
            assert words in r.json()["error"]["message"] and "Traceback" not in r.text
            assert str(tmp_path) not in r.text  # no server paths
        assert (await c.get("/v1/jobs")).json()["jobs"] == []
        assert await source_ids(c) == {"1001", "1002"}
    leftovers = list((tmp_path / "home" / "serve" / "jobs").glob("*"))
    assert leftovers == []  # refused uploads leave no files behind


def _finish_left_job(root, rt, settings, job_id):
    """A job manager over ``root`` that picks up the job a stopped server left, run until
    that job is done or failed (at most 60 s), then stopped."""
    manager = JobManager(root, rt, settings, max_upload_bytes=10_000)
    manager.start()
    deadline = time.monotonic() + 60
    while manager.snapshot(job_id)["status"] not in ("done", "failed"):
        assert time.monotonic() < deadline
        time.sleep(0.05)
    manager.stop()
    return manager


def test_a_job_the_last_server_left_running_resumes(tmp_path, hash_embedder, index_of):
    index = index_of(DOCS, "toy")
    settings = Settings(home=str(tmp_path / "home"))
    root = tmp_path / "jobs"
    files = root / "0123456789ab" / "files"
    files.mkdir(parents=True)
    (files / "000-new.jsonl").write_bytes(jsonl(NEW))
    job = Job(id="0123456789ab", kind="add", index="toy", created_at=1.0, status="running",
              files=["000-new.jsonl"], step="embedding", done=1, total=2)  # fmt: skip
    (root / job.id / JOB_FILE).write_text(json.dumps(job.to_dict()))
    with Runtime(settings, [index], embedder=hash_embedder) as rt:
        manager = _finish_left_job(root, rt, settings, job.id)
        state = manager.snapshot(job.id)
        assert state["status"] == "done" and state["resumed"] == 1, state
        assert state["report"]["documents_total"] == 4
        assert rt.searcher.list_documents("toy", 0, 10)["total"] == 4
        assert not files.exists()  # the upload is dropped once indexed
    saved = json.loads((root / job.id / JOB_FILE).read_text())
    assert saved["status"] == "done"


def test_a_stopping_server_leaves_its_job_queued_to_resume(tmp_path, hash_embedder, index_of):
    index = index_of(DOCS, "toy")
    settings = Settings(home=str(tmp_path / "home"))
    with Runtime(settings, [index], embedder=hash_embedder) as rt:
        manager = JobManager(tmp_path / "jobs", rt, settings, max_upload_bytes=10_000)
        manager._stopping.set()  # the server is stopping before the worker takes the job
        manager.start()
        job = manager.submit_remove("toy", ["1001"])
        manager.stop()
        state = manager.snapshot(job.id)
        assert state["status"] == "queued" and "resumes" in state["step"], state
        assert rt.searcher.list_documents("toy", 0, 10)["total"] == 2  # nothing removed


def test_a_new_server_keeps_only_the_newest_finished_jobs(tmp_path, hash_embedder, index_of):
    index = index_of(DOCS, "toy")
    settings = Settings(home=str(tmp_path / "home"))
    root = tmp_path / "jobs"
    for i, status in enumerate(["done", "failed", "done", "queued", "done"]):
        job = Job(id=f"{i:012x}", kind="remove", index="toy", created_at=float(i), status=status,
                  keys=["none"])  # fmt: skip
        (root / job.id).mkdir(parents=True)
        (root / job.id / JOB_FILE).write_text(json.dumps(job.to_dict()))
    with Runtime(settings, [index], embedder=hash_embedder) as rt:
        manager = JobManager(root, rt, settings, max_upload_bytes=10, keep_finished=2)
        manager.start()
        manager.stop()
        kept = {j["id"] for j in manager.list()}
    # the two newest finished (2, 4) and the unfinished one (3), which ran on start
    assert kept == {f"{i:012x}" for i in (2, 3, 4)}
    assert sorted(p.name for p in root.iterdir()) == sorted(kept)


def test_a_resumed_jobs_report_counts_what_all_its_attempts_added(
    tmp_path, hash_embedder, index_of
):
    from biorag.corpus.models import Document
    from biorag.retrieve.index import IndexDir

    index = index_of(DOCS, "toy")
    idx = IndexDir(index, hash_embedder)  # the first attempt stored one of the two, then died
    idx.add([Document.create(source_id=NEW[0]["id"], text=NEW[0]["text"])])
    idx.close()
    settings = Settings(home=str(tmp_path / "home"))
    root = tmp_path / "jobs"
    files = root / "0123456789ab" / "files"
    files.mkdir(parents=True)
    (files / "000-new.jsonl").write_bytes(jsonl(NEW))
    job = Job(id="0123456789ab", kind="add", index="toy", created_at=1.0, status="running",
              files=["000-new.jsonl"], documents_before=2)  # fmt: skip
    (root / job.id / JOB_FILE).write_text(json.dumps(job.to_dict()))
    with Runtime(settings, [index], embedder=hash_embedder) as rt:
        manager = _finish_left_job(root, rt, settings, job.id)
        report = manager.snapshot(job.id)["report"]
    assert report["documents_new"] == 2 and report["documents_new_this_attempt"] == 1
    assert report["documents_total"] == 4
