"""``biorag serve``: one process holding one runtime, an HTTP API over it, and the page.

Every request draws on the same :class:`~biorag.runtime.Runtime` (one embedder, one
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
for a malformed one, 503 with ``Retry-After`` when the ask queue is full or its wait runs out,
504 for an ask that ran past ``--max-ask-seconds``; a bug is a 500 that
says nothing of its traceback (which goes to the log).
"""

from __future__ import annotations

import asyncio
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
from fastapi.responses import HTMLResponse, JSONResponse, Response, StreamingResponse
from starlette.exceptions import HTTPException as StarletteHTTPException

from biorag.config import Settings, masked_dict
from biorag.errors import BioragError, LLMError
from biorag.methods.registry import METHODS
from biorag.runtime import Runtime
from biorag.serve.admission import Admission
from biorag.serve.asking import Asker, AskTimedOut, ClientGone, server_timing
from biorag.serve.auth import KeyCheck, RateLimit, SameOrigin
from biorag.serve.chat import chat_completion, chat_stream, model_list
from biorag.serve.documents import add_document_routes, event_stream, sse
from biorag.serve.graphs import add_graph_routes
from biorag.serve.headers import AllowedHosts, SecurityHeaders
from biorag.serve.jobs import JobManager, UploadTooLarge
from biorag.serve.metrics import CONTENT_TYPE as METRICS_TYPE
from biorag.serve.metrics import Metrics
from biorag.serve.runs import RunManager, add_run_routes
from biorag.serve.schemas import AskRequest, ChatRequest, RetrieveRequest

log = logging.getLogger("biorag.serve")


@dataclass
class ServerConfig:
    """What one ``biorag serve`` process serves, and its limits."""

    index_paths: list[Path] = field(default_factory=list)
    kg: Path | None = None
    #: A BioStrataKG directory (``biorag strata build --out``) for the strata queries.
    strata: Path | None = None
    api_keys: frozenset[str] = frozenset()
    max_concurrent_asks: int = 8
    #: asks that wait for a slot (beyond it: 503), and for how long at most (seconds)
    max_queued_asks: int = 64
    max_wait_s: float = 30.0
    #: the longest one ask may run, seconds (then it is stopped: 504); None: no limit
    max_ask_seconds: float | None = 300.0
    max_body_bytes: int = 1_000_000
    default_method: str = "retrieve-read"
    #: API calls a minute per key (per client address without keys); 0: no limit.
    rate_limit_per_minute: int = 0
    #: Datasets evaluation runs may read (None: the server starts no runs).
    datasets_dir: Path | None = None
    #: Where jobs and uploads are kept (None: ``<home>/serve``).
    data_dir: Path | None = None
    #: The most bytes one document upload may carry.
    max_upload_bytes: int = 50_000_000
    #: Host headers accepted (None: any). ``biorag serve`` on loopback without keys accepts only
    #: loopback names, so a web page elsewhere cannot reach it by DNS rebinding.
    allowed_hosts: list[str] | None = None


def create_app(settings: Settings, config: ServerConfig, runtime: Runtime | None = None) -> FastAPI:
    """The service over ``runtime`` (by default one built from ``settings`` and the config's
    indexes, closed at shutdown; a given one is the caller's to close)."""
    rt = runtime if runtime is not None else Runtime(settings, config.index_paths)
    metrics = Metrics()
    slots = Admission(config.max_concurrent_asks, config.max_queued_asks, config.max_wait_s)
    asker = Asker(rt, slots, config.default_method, config.kg, metrics, config.max_ask_seconds)
    auth = KeyCheck(config.api_keys, RateLimit(config.rate_limit_per_minute))
    data_dir = config.data_dir or Path(settings.home) / "serve"
    jobs = JobManager(data_dir / "jobs", rt, settings, config.max_upload_bytes)
    runs = RunManager(data_dir / "runs", config.datasets_dir, rt, settings)

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        # Build the heavy parts now, off the loop: built on a first request, they would hold
        # the runtime's lock while other requests wait on it.
        await asyncio.to_thread(_warm, rt)
        if rt.index_paths:
            jobs.start()  # jobs a stopped server left unfinished resume now
        if config.datasets_dir is not None:
            runs.start()  # and so do its runs
        try:
            yield
        finally:
            try:
                await asyncio.to_thread(runs.stop)
                await asyncio.to_thread(jobs.stop)
            finally:
                await (rt.aclose() if runtime is None else rt.aclose_llms())

    # /docs and /redoc are served below from vendored assets (nothing from a CDN)
    app = FastAPI(title="biorag", lifespan=lifespan, docs_url=None, redoc_url=None)
    app.state.runtime, app.state.config, app.state.jobs = rt, config, jobs
    app.state.runs, app.state.asker = runs, asker
    _add_error_handlers(app, metrics)
    app.add_middleware(
        BodyLimit, max_body=config.max_body_bytes, max_upload=config.max_upload_bytes
    )
    app.add_middleware(SameOrigin)
    if config.allowed_hosts is not None:
        app.add_middleware(AllowedHosts, allowed_hosts=config.allowed_hosts)
    app.add_middleware(SecurityHeaders)  # outermost: every response, refusals included
    key = Depends(auth)

    @app.get("/health")
    async def health() -> dict[str, str]:
        return {"status": "ok"}

    @app.get("/ready")
    async def ready() -> JSONResponse:
        try:
            names = rt.searcher.names if rt.index_paths else []
        except BioragError as e:  # the reason goes to the log: it may name server paths
            log.warning("not ready: %s", e)
            return JSONResponse({"ready": False, "why": "the indexes cannot be opened"}, 503)
        return JSONResponse({"ready": True, "indexes": names})

    from starlette.staticfiles import StaticFiles

    # the page's script, style and vendored libraries (cytoscape.js, MIT: vendor/)
    app.mount("/static", StaticFiles(packages=[("biorag.serve", "page")]), name="static")

    def page_file(name: str) -> str:
        return resources.files("biorag.serve").joinpath(f"page/{name}").read_text("utf-8")

    @app.get("/", response_class=HTMLResponse)
    async def page() -> str:
        return page_file("index.html")

    @app.get("/docs", response_class=HTMLResponse, include_in_schema=False)
    async def swagger() -> str:
        return page_file("docs.html")  # Swagger UI, vendored (Apache-2.0: vendor/swagger-ui)

    @app.get("/redoc", response_class=HTMLResponse, include_in_schema=False)
    async def redoc() -> str:
        return page_file("redoc.html")  # ReDoc, vendored (MIT: vendor/redoc)

    @app.get("/metrics", dependencies=[key])
    async def show_metrics() -> Response:
        return Response(metrics.exposition(jobs.list(limit=10_000), slots.queued, slots.busy),
                        media_type=METRICS_TYPE)  # fmt: skip

    @app.get("/v1/methods", dependencies=[key])
    async def methods() -> dict[str, Any]:
        return {"methods": sorted(METHODS), "default": config.default_method}

    @app.get("/v1/models", dependencies=[key])
    async def models() -> dict[str, Any]:
        """The OpenAI model list chat front ends read first: one model per method (``model``
        in a chat request names it), the server's default first."""
        return {"object": "list", "data": model_list(config.default_method)}

    @app.get("/v1/config", dependencies=[key])
    async def show_config() -> dict[str, Any]:
        return {"settings": masked_dict(settings), "indexes": [str(p) for p in rt.index_paths]}

    @app.post("/v1/ask", dependencies=[key], response_model=None)
    async def ask(
        body: AskRequest, request: Request, response: Response
    ) -> dict[str, Any] | StreamingResponse:
        times: dict[str, float] = {}  # sent as Server-Timing: the wait for a slot, the answer
        if not body.stream:
            answer = await asker.ask(body, client_of(request), request.is_disconnected, times)
            response.headers["Server-Timing"] = server_timing(times)
            return answer
        # a bad ask or a full queue fails here, before streaming
        events = await asker.stream(body, client_of(request), times, request.is_disconnected)
        response = event_stream(sse(kind, data) async for kind, data in events)
        response.headers["Server-Timing"] = server_timing(times)
        return response

    @app.post("/v1/retrieve", dependencies=[key])
    async def retrieve(body: RetrieveRequest) -> dict[str, Any]:
        retriever = body.retriever or settings.retrieval.retriever
        found = await asyncio.to_thread(
            rt.searcher.search, [body.query], body.k, retriever, body.level
        )
        return {"passages": [p.to_dict() for p in found[0]]}

    if rt.index_paths:
        jobs_started = jobs.start  # in-process clients (tests) may not run the lifespan

        async def started() -> None:
            jobs_started()

        add_document_routes(app, jobs, rt, Depends(auth), Depends(started))

    add_graph_routes(app, config.kg, config.strata, key)
    add_run_routes(app, runs, key)

    @app.get("/v1/documents/{key_:path}", dependencies=[key])
    async def document(key_: str) -> dict[str, Any]:
        found = await asyncio.to_thread(rt.searcher.get_document, key_)
        if found is None:
            raise HTTPException(404, f"no document {key_!r} in the served indexes")
        return found

    @app.post("/v1/chat/completions", dependencies=[key], response_model=None)
    async def chat(body: ChatRequest, request: Request) -> dict[str, Any] | StreamingResponse:
        if body.stream:
            stream = await chat_stream(body, asker, client_of(request), request.is_disconnected)
            return event_stream(stream)
        return await chat_completion(body, asker, client_of(request), request.is_disconnected)

    return app


def client_of(request: Request) -> str:
    """Whose turn an ask waits for: its API key (hashed), else its address."""
    import hashlib

    auth = request.headers.get("authorization", "")
    if auth:
        return "key:" + hashlib.sha256(auth.encode()).hexdigest()[:16]
    return "addr:" + (request.client.host if request.client else "")


class RequestLog:
    """A log line and the metrics of every request: method, route template, status, seconds
    (a failure that propagates counts as the 500 it is answered with)."""

    def __init__(self, app: Any, metrics: Metrics) -> None:
        self.app, self.metrics = app, metrics

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started, status = time.perf_counter(), [500]

        async def sent(message: Any) -> None:
            if message["type"] == "http.response.start":
                status[0] = message["status"]
            await send(message)

        try:
            await self.app(scope, receive, sent)
        finally:
            seconds = time.perf_counter() - started
            route = str(getattr(scope.get("route"), "path", "other")).replace(":path}", "}")
            self.metrics.request(scope["method"], route, status[0], seconds)
            log.info("%s %s %d %.3fs", scope["method"], scope["path"], status[0], seconds)


def _warm(rt: Runtime) -> None:
    """Load and run once what the first ask would otherwise wait for (15-20 s on a cold
    machine): the embedding model (a query embedded past its cache), the reranker, and every
    served index (a search through the default retriever). Runs before the server listens, so
    ``/ready`` says ready only once it is done. A failure here (a remote embedding server
    still down) is logged, and the first ask meets it instead."""
    started = time.perf_counter()
    try:
        embedder = rt.embedder
        getattr(embedder, "inner", embedder).embed(["warm-up"])  # no cache entry: the model runs
        _ = rt.reranker
        if rt.index_paths:
            rt.searcher.search(["warm-up"], 1, rt.settings.retrieval.retriever)
    except Exception as e:  # any failure: the server starts, and the first ask meets it
        log.warning("warm-up incomplete (the first ask will load the rest): %s", e)
        return
    log.info("warmed up in %.1f s: the embedding model and the indexes are loaded",
             time.perf_counter() - started)  # fmt: skip


class BodyLimit:
    """ASGI middleware: a body over ``max_body`` bytes (``max_upload`` for a document upload)
    is refused with 413, by its declared length at once or, without one (a chunked body), by
    reading it up to the limit first."""

    def __init__(self, app: Any, max_body: int, max_upload: int | None = None) -> None:
        self.app, self.max_body = app, max_body
        # multipart framing rides on top of the files' bytes
        self.max_upload = max_body if max_upload is None else max_upload + 1_000_000

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        upload = scope["method"] == "POST" and scope["path"].rstrip("/") == "/v1/documents"
        limit = self.max_upload if upload else self.max_body
        length = dict(scope["headers"]).get(b"content-length")
        if length is not None:
            if length.isdigit() and int(length) > limit:
                await _too_large(limit)(scope, receive, send)
                return
            await self.app(scope, receive, send)
            return
        messages, seen = [], 0
        while True:
            message = await receive()
            messages.append(message)
            seen += len(message.get("body", b""))
            if seen > limit:
                await _too_large(limit)(scope, receive, send)
                return
            if message["type"] != "http.request" or not message.get("more_body"):
                break
        replay = iter(messages)

        async def replayed() -> Any:
            return next(replay, None) or await receive()

        await self.app(scope, replayed, send)


def _too_large(max_body: int) -> JSONResponse:
    body = {"error": {"type": "too_large", "message": f"the request body is over {max_body} bytes"}}
    return JSONResponse(body, status_code=413)


def _add_error_handlers(app: FastAPI, metrics: Metrics) -> None:
    """JSON errors for every failure, and a log line and metrics per request."""

    def error(status: int, kind: str, message: str, headers: Any = None) -> JSONResponse:
        body = {"error": {"type": kind, "message": message}}
        return JSONResponse(body, status_code=status, headers=headers)

    # a plain ASGI middleware, not @app.middleware("http"): that one wraps the request's
    # receive channel, and an endpoint no longer hears its client hang up
    app.add_middleware(RequestLog, metrics=metrics)

    @app.exception_handler(BioragError)
    async def user_error(request: Request, e: BioragError) -> JSONResponse:
        return error(400, type(e).__name__, " ".join(str(e).split()))

    @app.exception_handler(ClientGone)
    async def client_gone(request: Request, e: ClientGone) -> JSONResponse:
        # nobody reads it; 499 (nginx's "client closed request") marks it in the log and metrics
        return error(499, "client_closed", "the client hung up while its ask waited for a slot")

    @app.exception_handler(AskTimedOut)
    async def ask_timed_out(request: Request, e: AskTimedOut) -> JSONResponse:
        return error(504, "ask_timeout", str(e))

    @app.exception_handler(UploadTooLarge)
    async def upload_too_large(request: Request, e: UploadTooLarge) -> JSONResponse:
        return error(413, "too_large", " ".join(str(e).split()))

    @app.exception_handler(LLMError)
    async def model_down(request: Request, e: LLMError) -> JSONResponse:
        # the model server failed: not the caller's mistake, and worth a retry
        log.warning("%s %s: %s", request.method, request.url.path, e)
        message = "the model server failed on this request; retry shortly"
        return error(503, "model_unavailable", message, {"Retry-After": "5"})

    @app.exception_handler(StarletteHTTPException)
    async def http_error(request: Request, e: StarletteHTTPException) -> JSONResponse:
        kinds = {401: "unauthorized", 404: "not_found", 405: "method_not_allowed",
                 413: "too_large", 429: "rate_limited", 503: "busy"}  # fmt: skip
        return error(e.status_code, kinds.get(e.status_code, "error"), str(e.detail), e.headers)

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
