"""``biorag serve``: the HTTP API and the page over one or more indexes."""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import typer

from biorag.cli.common import STATE, handle_errors
from biorag.errors import BioragError
from biorag.methods.registry import METHODS
from biorag.retrieve.index import read_manifest


@handle_errors
def serve(
    index: list[Path] = typer.Option([], "--index", help="index directory (repeat per corpus)"),
    kg: Path = typer.Option(None, "--kg", help="knowledge-graph directory for vectorgraphrag"),
    strata: Path = typer.Option(None, "--strata", help="BioStrataKG directory (strata queries)"),
    host: str = typer.Option("127.0.0.1", "--host", help="address to listen on"),
    port: int = typer.Option(8000, "--port", help="port to listen on"),
    api_keys_file: Path = typer.Option(
        None, "--api-keys-file", help="file of API keys, one per line (or BIORAG_SERVER_API_KEYS)"
    ),
    max_concurrent_asks: int = typer.Option(
        8, "--max-concurrent-asks", help="asks answered at once; more wait their turn"
    ),
    max_queued_asks: int = typer.Option(
        64, "--max-queued-asks", help="asks waiting for a slot; one more gets 503 Retry-After"
    ),
    max_wait: float = typer.Option(
        30.0, "--max-wait", help="seconds an ask waits for a slot before a 503 Retry-After"
    ),
    max_ask_seconds: float = typer.Option(
        300.0, "--max-ask-seconds", help="the longest one ask may run before it is stopped (504)"
    ),
    method: str = typer.Option("retrieve-read", "--method", help="the default method"),
    datasets: Path = typer.Option(
        None, "--datasets", help="folder of benchmark files evaluation runs may read"
    ),
    data_dir: Path = typer.Option(
        None, "--data-dir", help="where document jobs and uploads are kept (default HOME/serve)"
    ),
    max_upload_mb: float = typer.Option(50.0, "--max-upload-mb", help="largest document upload"),
    rate_limit: int = typer.Option(
        600, "--rate-limit", help="API calls a minute per key (per address without keys); 0: none"
    ),
) -> None:
    """Serve the API (OpenAPI at /docs) and the page (/) on HOST:PORT."""
    try:
        import uvicorn

        from biorag.serve.app import ServerConfig, create_app  # lazy: loads fastapi
    except ImportError as e:
        raise BioragError(
            f"biorag serve needs the server extra ({e.name} is missing): "
            "pip install 'biorag[server]'"
        ) from None
    from biorag.serve.auth import check_exposure, load_keys  # lazy: loads fastapi

    keys = load_keys(api_keys_file)
    check_exposure(host, keys)
    if max_concurrent_asks < 1 or max_queued_asks < 0 or max_wait <= 0 or max_ask_seconds <= 0:
        raise BioragError(
            "--max-concurrent-asks must be at least 1, --max-queued-asks 0 or more, and "
            "--max-wait and --max-ask-seconds positive"
        )
    if datasets is not None and not datasets.is_dir():
        raise BioragError(f"{datasets} is not a folder of datasets", param="datasets")
    if max_upload_mb <= 0 or rate_limit < 0:
        raise BioragError("--max-upload-mb must be positive and --rate-limit 0 or more")
    if method not in METHODS:
        raise BioragError(f"unknown method {method!r}; choose one of {', '.join(sorted(METHODS))}")
    for p in index:
        read_manifest(p)  # a missing or foreign directory fails here, not on the first ask
    for option, graph in (("kg", kg), ("strata", strata)):
        if graph is not None and not (graph / "kg.sqlite").is_file():
            raise BioragError(
                f"{graph} holds no knowledge graph (no kg.sqlite); build one with "
                f"biorag {'kg' if option == 'kg' else 'strata'} build --out {graph}",
                param=option,
            )
    config = ServerConfig(
        index_paths=list(index),
        kg=kg,
        strata=strata,
        api_keys=keys,
        max_concurrent_asks=max_concurrent_asks,
        max_queued_asks=max_queued_asks,
        max_wait_s=max_wait,
        max_ask_seconds=max_ask_seconds,
        default_method=method,
        data_dir=data_dir,
        datasets_dir=datasets,
        max_upload_bytes=int(max_upload_mb * 1_000_000),
        rate_limit_per_minute=rate_limit,
        # without keys only this machine may ask (check_exposure), by its own names
        allowed_hosts=None if keys else ["127.0.0.1", "localhost", "[::1]", host],
    )
    app = create_app(STATE.settings(), config)
    level = "info" if STATE.verbose else "warning"
    server = _graceful_server(
        uvicorn.Config(app, host=host, port=port, log_level=level, timeout_graceful_shutdown=30)
    )
    typer.echo(f"biorag serve: loading the models and indexes, then serving on "
               f"http://{host}:{port}/ (API docs at /docs)", err=True)  # fmt: skip
    server.run()
    typer.echo("biorag serve stopped", err=True)


def _server_class() -> type:
    import uvicorn

    class Server(uvicorn.Server):
        """uvicorn's server, stopped gracefully by Ctrl-C or SIGTERM (asks in flight finish,
        the runtime closes) and then exiting quietly, not re-raising the signal."""

        @contextlib.contextmanager
        def capture_signals(self) -> Iterator[None]:
            if threading.current_thread() is not threading.main_thread():
                yield  # signals reach the main thread only
                return
            previous = {sig: signal.signal(sig, self.handle_exit) for sig in _SIGNALS}
            try:
                yield
            finally:
                for sig, handler in previous.items():
                    signal.signal(sig, handler)

    return Server


_SIGNALS = (signal.SIGINT, signal.SIGTERM)


def _graceful_server(config: Any) -> Any:
    """A uvicorn server of ``config`` that stops gracefully on Ctrl-C or SIGTERM."""
    return _server_class()(config)
