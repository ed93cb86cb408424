"""``biorag serve``: one process holding one runtime, an HTTP API over it, and the page.

Every request draws on the same :class:`~biorag.methods.runtime.Runtime` (one embedder, one
searcher, one model server connection); each ask gets a child runtime with an LLM client of its
own, so its answer carries its own accounting. The API:

- ``POST /v1/ask``: answer a question; the answer's sentences cite chunk ids, the evidence
  gives each chunk's document, corpus and span, ``accounting`` the LLM calls and tokens.
- ``POST /v1/retrieve``, ``GET /v1/documents/{id}`` (content id or source id: a PMID).
- ``POST /v1/chat/completions``: the OpenAI shape, for chat front ends.
- ``GET /v1/methods``, ``GET /v1/config`` (secrets masked), ``GET /health``, ``GET /ready``.
- ``GET /``: the page.

Errors are JSON (``{"error": {"type", "message"}}``): 400 for a user's mistake (a
:class:`~biorag.errors.BioragError`), 401 without a valid key, 413 for an oversized body, 422
for a malformed one, 503 with ``Retry-After`` when every ask slot is taken; a bug is a 500 that
says nothing of its traceback (which goes to the log).
"""

from __future__ import annotations

import logging
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

from fastapi import Depends, FastAPI, HTTPException, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import HTMLResponse, JSONResponse

from biorag.config import Settings, masked_dict
from biorag.errors import BioragError
from biorag.llm.accounting import Accounting
from biorag.llm.shared import SharedLLM
from biorag.methods.runtime import Runtime
from biorag.serve.auth import KeyCheck
from biorag.serve.schemas import AskRequest, ChatRequest, RetrieveRequest

log = logging.getLogger("biorag.serve")


@dataclass
class ServerConfig:
    """What one ``biorag serve`` process serves, and its limits."""

    index_paths: list[Path] = field(default_factory=list)
    kg: Path | None = None
    api_keys: frozenset[str] = frozenset()
    max_concurrent_asks: int = 8
    max_body_bytes: int = 1_000_000
    default_method: str = "retrieve-read"


class _Slots:
    """At most ``n`` asks at once; one more is refused at once (503), not queued."""

    def __init__(self, n: int) -> None:
        self.n, self.busy = n, 0

    def take(self) -> None:
        if self.busy >= self.n:
            raise HTTPException(
                503, f"all {self.n} ask slots are busy; retry shortly", {"Retry-After": "1"}
            )
        self.busy += 1

    def give(self) -> None:
        self.busy -= 1


def create_app(settings: Settings, config: ServerConfig, runtime: Runtime | None = None) -> FastAPI:
    """The service over ``runtime`` (by default one built from ``settings`` and the config's
    indexes, closed at shutdown; a given one is the caller's to close)."""
    rt = runtime if runtime is not None else Runtime(settings, config.index_paths)
    shared = SharedLLM(settings)
    slots = _Slots(config.max_concurrent_asks)
    auth = KeyCheck(config.api_keys)

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        yield
        await shared.aclose()
        if runtime is None:
            await rt.aclose()

    app = FastAPI(title="biorag", lifespan=lifespan, docs_url="/docs", redoc_url=None)
    app.state.runtime, app.state.config = rt, config
    _add_error_handlers(app, config.max_body_bytes)
    key = Depends(auth)

    @app.get("/health")
    async def health() -> dict[str, str]:
        return {"status": "ok"}

    @app.get("/ready")
    async def ready() -> JSONResponse:
        try:
            names = rt.searcher.names if rt.index_paths else []
        except BioragError as e:
            return JSONResponse({"ready": False, "why": str(e)}, status_code=503)
        return JSONResponse({"ready": True, "indexes": names})

    @app.get("/", response_class=HTMLResponse)
    async def page() -> str:
        return resources.files("biorag.serve").joinpath("page/index.html").read_text("utf-8")

    @app.get("/v1/methods", dependencies=[key])
    async def methods() -> dict[str, Any]:
        from biorag.methods.registry import METHODS

        return {"methods": sorted(METHODS), "default": config.default_method}

    @app.get("/v1/config", dependencies=[key])
    async def show_config() -> dict[str, Any]:
        return {"settings": masked_dict(settings), "indexes": [str(p) for p in rt.index_paths]}

    @app.post("/v1/ask", dependencies=[key])
    async def ask(body: AskRequest) -> dict[str, Any]:
        return await _ask(rt, shared, slots, config, body)

    @app.post("/v1/retrieve", dependencies=[key])
    async def retrieve(body: RetrieveRequest) -> dict[str, Any]:
        import asyncio

        retriever = body.retriever or settings.retrieval.retriever
        found = await asyncio.to_thread(
            rt.searcher.search, [body.query], body.k, retriever, body.level
        )
        return {"passages": [p.to_dict() for p in found[0]]}

    @app.get("/v1/documents/{key_}", dependencies=[key])
    async def document(key_: str) -> dict[str, Any]:
        return _document(rt, key_)

    @app.post("/v1/chat/completions", dependencies=[key])
    async def chat(body: ChatRequest) -> dict[str, Any]:
        from biorag.serve.chat import chat_completion

        return await chat_completion(body, lambda ask: _ask(rt, shared, slots, config, ask))

    return app


async def _ask(
    rt: Runtime, shared: SharedLLM, slots: _Slots, config: ServerConfig, body: AskRequest
) -> dict[str, Any]:
    """Answer one ask on a child runtime of its own; the answer with its accounting."""
    from biorag.corpus.datasets.base import Question
    from biorag.methods.registry import build_method

    options = dict(body.method_options)
    if body.method == "vectorgraphrag" and config.kg is not None:
        options.setdefault("kg", str(config.kg))
    slots.take()
    try:
        acc = Accounting()
        child = rt.for_question(shared.client(acc))
        qa = build_method(body.method, child, options)
        if qa.needs_index and not rt.index_paths:
            raise BioragError(
                f"method {body.method!r} retrieves evidence; this server has no index"
            )
        question = Question(text=body.question, options=body.options, type=body.type)
        with acc.run():
            answer = await qa.answer(question)
    finally:
        slots.give()
    return {**answer.model_dump(), "accounting": acc.report()}


def _document(rt: Runtime, key: str) -> dict[str, Any]:
    """A document of the served indexes by content id or source id (its text, title, corpus)."""
    for searcher in rt.searcher.searchers:
        ids = searcher.store.resolve_document_ids(key)
        docs = searcher.store.get_documents(ids)
        if docs:
            doc = next(iter(docs.values()))
            return {**doc.model_dump(exclude={"spans"}), "corpus": searcher.name}
    raise HTTPException(404, f"no document {key!r} in the served indexes")


def _add_error_handlers(app: FastAPI, max_body: int) -> None:
    """JSON errors for every failure, and the body size limit."""

    def error(status: int, kind: str, message: str, headers: Any = None) -> JSONResponse:
        body = {"error": {"type": kind, "message": message}}
        return JSONResponse(body, status_code=status, headers=headers)

    @app.middleware("http")
    async def limit_body(request: Request, call_next: Any) -> Any:
        size = request.headers.get("content-length")
        if size is not None and size.isdigit() and int(size) > max_body:
            return error(413, "too_large", f"the request body is over {max_body} bytes")
        started = time.perf_counter()
        response = await call_next(request)
        log.info("%s %s %d %.3fs", request.method, request.url.path, response.status_code,
                 time.perf_counter() - started)  # fmt: skip
        return response

    @app.exception_handler(BioragError)
    async def user_error(request: Request, e: BioragError) -> JSONResponse:
        return error(400, type(e).__name__, " ".join(str(e).split()))

    @app.exception_handler(HTTPException)
    async def http_error(request: Request, e: HTTPException) -> JSONResponse:
        kind = {401: "unauthorized", 404: "not_found", 503: "busy"}.get(e.status_code, "error")
        return error(e.status_code, kind, str(e.detail), e.headers)

    @app.exception_handler(RequestValidationError)
    async def bad_body(request: Request, e: RequestValidationError) -> JSONResponse:
        problems = [
            f"{'.'.join(str(p) for p in err['loc'] if p != 'body') or 'body'}: {err['msg']}"
            for err in e.errors()
        ]
        return error(422, "invalid_request", "; ".join(problems))

    @app.exception_handler(Exception)
    async def bug(request: Request, e: Exception) -> JSONResponse:
        log.exception("%s %s failed", request.method, request.url.path)
        return error(500, "internal", "the server failed on this request; its log says why")
