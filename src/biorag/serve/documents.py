"""The documents and jobs endpoints of ``biorag serve``.

- ``GET /v1/documents?index=&offset=&limit=&q=``: a page of an index's documents with their
  state (with ``q``: those whose source id, content id or title holds it, and how many do).
- ``POST /v1/documents`` (multipart: ``files``, ``format``, ``index``): upload corpus files
  (JSON Lines, PubMed XML, text or Markdown); 202 with the add job.
- ``DELETE /v1/documents/{id}?index=``: 202 with the remove job (content id or source id).
- ``GET /v1/jobs``, ``GET /v1/jobs/{id}``, and ``GET /v1/jobs/{id}/events``: the job's progress
  as Server-Sent Events (``event: job``, its state as JSON, at each change; the last one when
  it is done or failed).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from typing import Any

from fastapi import FastAPI, File, Form, HTTPException, Query, UploadFile
from fastapi.params import Depends
from fastapi.responses import JSONResponse, StreamingResponse

from biorag.runtime import Runtime
from biorag.serve.jobs import JobManager

#: The most files one upload may carry.
MAX_FILES = 100
#: the deepest page a listing serves (SQLite's OFFSET overflows past 2**63)
MAX_OFFSET = 10**12
_POLL_S = 0.25
_HEARTBEAT_S = 15.0


def add_document_routes(
    app: FastAPI, jobs: JobManager, rt: Runtime, key: Depends, started: Depends
) -> None:
    """Mount the documents and jobs endpoints on ``app``, guarded by ``key``; ``started``
    starts the job worker if the app's lifespan has not."""

    @app.get("/v1/documents", dependencies=[key])
    async def list_documents(
        index: str | None = None,
        offset: int = Query(0, ge=0, le=MAX_OFFSET),
        limit: int = Query(50, ge=1, le=500),
        q: str = Query(
            "",
            max_length=200,
            description="only documents whose ids or title hold this (the page's document search)",
        ),
    ) -> dict[str, Any]:
        name = jobs.index_name(index)
        return await asyncio.to_thread(rt.searcher.list_documents, name, offset, limit, q)

    @app.post("/v1/documents", dependencies=[key, started], status_code=202)
    async def upload(
        files: list[UploadFile] = File(..., description="corpus files"),
        format: str = Form("auto", description="auto|jsonl|pubmed_xml|textdir|medrag|bioasq"),
        index: str | None = Form(None, description="the served index to add to"),
    ) -> dict[str, Any]:
        if len(files) > MAX_FILES:
            raise HTTPException(413, f"{len(files)} files in one upload; at most {MAX_FILES}")
        uploads = [(f.filename or "", f.file) for f in files]
        job = await asyncio.to_thread(jobs.submit_add, index, uploads, format)
        return job.to_dict()

    # ``:path``: a DOI-like id holds "/" (sent percent-encoded or as is)
    @app.delete("/v1/documents/{doc_key:path}", dependencies=[key, started], status_code=202)
    async def remove(doc_key: str, index: str | None = None) -> dict[str, Any]:
        name = jobs.index_name(index)
        if not await asyncio.to_thread(_has_document, rt, doc_key, name):
            raise HTTPException(404, f"no document {doc_key!r} in index {name!r}")
        return (await asyncio.to_thread(jobs.submit_remove, name, [doc_key])).to_dict()

    @app.get("/v1/jobs", dependencies=[key])
    async def list_jobs() -> dict[str, Any]:
        return {"jobs": jobs.list()}

    @app.get("/v1/jobs/{job_id}", dependencies=[key])
    async def get_job(job_id: str) -> dict[str, Any]:
        found = jobs.snapshot(job_id)
        if found is None:
            raise HTTPException(404, f"no job {job_id!r}")
        return found

    @app.get("/v1/jobs/{job_id}/events", dependencies=[key], response_model=None)
    async def job_events(job_id: str) -> StreamingResponse | JSONResponse:
        if jobs.get(job_id) is None:
            raise HTTPException(404, f"no job {job_id!r}")
        return event_stream(_follow(jobs, job_id))


def _has_document(rt: Runtime, key: str, index: str) -> bool:
    return rt.searcher.get_document(key, corpora=[index]) is not None


def event_stream(events: AsyncIterator[str]) -> StreamingResponse:
    """A response that sends ``events`` (Server-Sent Events) as they come."""
    headers = {"Cache-Control": "no-cache", "X-Accel-Buffering": "no"}
    return StreamingResponse(events, media_type="text/event-stream", headers=headers)


def sse(event: str, data: Any) -> str:
    """One Server-Sent Event: its name and its data as one line of JSON."""
    return f"event: {event}\ndata: {json.dumps(data, ensure_ascii=False)}\n\n"


async def _follow(jobs: JobManager, job_id: str) -> AsyncIterator[str]:
    last: dict[str, Any] | None = None
    quiet = 0.0
    while True:
        state = jobs.snapshot(job_id)
        if state is None:
            return
        if state != last:
            yield sse("job", state)
            last, quiet = state, 0.0
            if state["status"] in ("done", "failed"):
                return
        elif quiet >= _HEARTBEAT_S:
            yield ": still running\n\n"  # a comment: keeps proxies from closing the stream
            quiet = 0.0
        await asyncio.sleep(_POLL_S)
        quiet += _POLL_S
