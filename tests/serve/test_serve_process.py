"""``biorag serve`` as a process: the real embedder, a real index, HTTP on loopback."""

from __future__ import annotations

import json
import os
import signal
import subprocess

import httpx
import pytest

pytest.importorskip("uvicorn")

from tests.serve.serving import BIORAG, start_serve, stop_serve


@pytest.mark.slow
def test_serve_answers_over_http_and_stops_cleanly(tmp_path):
    env = {**os.environ, "BIORAG_HOME": str(tmp_path / "home"), "BIORAG_PROGRESS": "0"}
    corpus = tmp_path / "c.jsonl"
    corpus.write_text(
        "".join(
            json.dumps(d) + "\n"
            for d in [
                {"id": "31", "text": "Metformin lowers blood glucose in type 2 diabetes."},
                {"id": "32", "text": "Statins lower LDL cholesterol and heart attacks."},
            ]
        )
    )
    build = [*BIORAG, "index", "build", "--corpus", str(corpus), "--out", str(tmp_path / "idx")]
    subprocess.run(build, env=env, check=True, capture_output=True, timeout=600)
    exposed = [*BIORAG, "serve", "--index", str(tmp_path / "idx"), "--host", "0.0.0.0"]
    refused = subprocess.run(exposed, env=env, capture_output=True, text=True, timeout=120)
    assert refused.returncode == 2 and "anyone on the network" in refused.stderr
    assert "(option --host)" in refused.stderr

    log_path = tmp_path / "serve.log"
    proc, base = start_serve(["--index", str(tmp_path / "idx")], env, log_path)
    try:
        r = httpx.post(f"{base}/v1/ask", json={"question": "What lowers blood glucose?"},
                       timeout=120)  # fmt: skip
        assert r.status_code == 200, r.text
        ans = r.json()
        assert ans["evidence"][0]["source_id"] == "31" and ans["sentences"]
        assert httpx.get(f"{base}/ready", timeout=10).json()["ready"] is True
    finally:
        code = stop_serve(proc, signal.SIGINT)
    logged = log_path.read_text()
    assert code == 0 and "biorag serve stopped" in logged
    # the model and the index were loaded before the server answered anything
    assert "warmed up in" in logged and logged.index("warmed up in") < logged.index("GET /health")


@pytest.mark.slow
def test_an_add_job_cut_by_a_restart_resumes_and_searches_go_on(tmp_path):
    """Upload 600 documents, stop the server while their job runs, start it again: the job
    resumes and finishes, and the index holds every document once."""
    env = {**os.environ, "BIORAG_HOME": str(tmp_path / "home"), "BIORAG_PROGRESS": "0"}
    first = tmp_path / "c.jsonl"
    first.write_text(json.dumps({"id": "31", "text": "Metformin lowers blood glucose."}) + "\n")
    build = [*BIORAG, "index", "build", "--corpus", str(first), "--out", str(tmp_path / "idx")]
    subprocess.run(build, env=env, check=True, capture_output=True, timeout=600)
    many = "".join(
        json.dumps({"id": str(5000 + i), "text": f"Compound {i} inhibits kinase {i % 37} in "
                    f"cell line {i % 11}; dose {i} mg reduced tumour growth."}) + "\n"
        for i in range(600)
    )  # fmt: skip
    args = ["--index", str(tmp_path / "idx")]
    log_path = tmp_path / "serve.log"
    proc, base = start_serve(args, env, log_path)
    try:
        r = httpx.post(f"{base}/v1/documents", files={"files": ("many.jsonl", many.encode())},
                       timeout=60)  # fmt: skip
        assert r.status_code == 202, r.text
        job_id = r.json()["id"]
        # searches answer while the job runs, from the index as it was
        hits = httpx.post(f"{base}/v1/retrieve", json={"query": "metformin", "k": 1}, timeout=60)
        assert hits.json()["passages"][0]["source_id"] == "31"
    finally:
        assert stop_serve(proc) == 0, log_path.read_text()
    proc, base = start_serve(args, env, log_path)  # a new server, the same data folder
    try:
        with httpx.stream("GET", f"{base}/v1/jobs/{job_id}/events", timeout=600) as events:
            states = [json.loads(ln[6:]) for ln in events.iter_lines() if ln.startswith("data: ")]
        final = states[-1]
        assert final["status"] == "done", final
        assert final["resumed"] == 1, "the job was not cut by the restart"
        assert final["report"]["documents_total"] == 601
        assert final["report"]["documents_new"] == 600  # both attempts, not the last alone
        listed = httpx.get(f"{base}/v1/documents", params={"limit": 1}, timeout=60).json()
        assert listed["total"] == 601 and listed["states"]["embedded"] == 601
        hits = httpx.post(f"{base}/v1/retrieve", json={"query": "compound 599 kinase", "k": 1},
                          timeout=60).json()  # fmt: skip
        assert hits["passages"][0]["source_id"] == "5599"
    finally:
        assert stop_serve(proc) == 0, log_path.read_text()
