"""OpenAIEmbedder against a real HTTP server on 127.0.0.1."""

from __future__ import annotations

import contextlib
import json
import socket
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import numpy as np
import pytest

from biorag.embed.openai_embedder import OpenAIEmbedder, embeddings_url
from biorag.errors import BioragError

SECRET = "sk-test-secret-123"


class FakeServer:
    """Records requests; answers with vectors [len(text), 1, 2] (not normalized), in reverse
    index order; ``fail_next`` status codes (or ``(status, content type, body)``) are answered
    first; ``delay`` seconds pass before each answer."""

    def __init__(self) -> None:
        self.requests: list[dict[str, Any]] = []
        self.fail_next: list[int | tuple[int, str, str]] = []
        self.delay = 0.0
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                server.requests.append(
                    {"path": self.path, "auth": self.headers.get("Authorization"), "body": body}
                )
                if server.delay:
                    time.sleep(server.delay)
                if server.fail_next:
                    action = server.fail_next.pop(0)
                    status, ctype, text = (
                        action if isinstance(action, tuple) else (action, "", '{"error": "nope"}')
                    )
                    self.send_response(status)
                    if ctype:
                        self.send_header("Content-Type", ctype)
                    self.end_headers()
                    with contextlib.suppress(OSError):  # the client gave up (timeout test)
                        self.wfile.write(text.encode())
                    return
                data = [
                    {"object": "embedding", "index": i, "embedding": [float(len(t)), 1.0, 2.0]}
                    for i, t in enumerate(body["input"])
                ][::-1]
                out = json.dumps({"object": "list", "data": data, "model": body["model"]})
                try:
                    self.send_response(200)
                    self.send_header("Content-Type", "application/json")
                    self.end_headers()
                    self.wfile.write(out.encode())
                except OSError:  # the client gave up (timeout test)
                    pass

            def log_message(self, *args: Any) -> None:
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"


@pytest.fixture
def server() -> Iterator[FakeServer]:
    s = FakeServer()
    thread = threading.Thread(target=s.httpd.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    yield s
    s.httpd.shutdown()
    s.httpd.server_close()


def test_batches_normalizes_and_learns_dim(server: FakeServer, monkeypatch) -> None:
    monkeypatch.setenv("MY_EMBED_KEY", SECRET)
    e = OpenAIEmbedder(server.url, "bge-small", api_key_env="MY_EMBED_KEY", batch_size=2)
    assert e.model_id == "openai:bge-small"
    texts = ["a", "bbb", "cc", "dddd", "e"]
    v = e.embed(texts)
    assert v.shape == (5, 3) and v.dtype == np.float32 and e.dim == 3
    np.testing.assert_allclose(np.linalg.norm(v, axis=1), 1.0, atol=1e-6)
    expected = np.array([[len(t), 1, 2] for t in texts], dtype=np.float32)
    expected /= np.linalg.norm(expected, axis=1, keepdims=True)
    np.testing.assert_allclose(v, expected, atol=1e-6)  # order restored from "index"
    assert [r["body"]["input"] for r in server.requests] == [["a", "bbb"], ["cc", "dddd"], ["e"]]
    assert {r["path"] for r in server.requests} == {"/v1/embeddings"}
    assert {r["auth"] for r in server.requests} == {f"Bearer {SECRET}"}
    assert server.requests[0]["body"]["model"] == "bge-small"
    assert e.embed_query("xyz").shape == (3,)


def test_dim_probe_retry_and_no_key(server: FakeServer, monkeypatch) -> None:
    monkeypatch.delenv("NO_SUCH_KEY_VAR", raising=False)
    e = OpenAIEmbedder(server.url, "m", api_key_env="NO_SUCH_KEY_VAR", max_retries=2)
    server.fail_next = [503]
    assert e.dim == 3  # probe request, after one retry
    assert len(server.requests) == 2 and server.requests[-1]["auth"] is None


def test_client_error_is_clear_and_never_shows_the_key(server: FakeServer, monkeypatch) -> None:
    monkeypatch.setenv("MY_EMBED_KEY", SECRET)
    e = OpenAIEmbedder(server.url, "m", api_key_env="MY_EMBED_KEY")
    server.fail_next = [401]
    with pytest.raises(BioragError, match="HTTP 401") as err:
        e.embed(["x"])
    assert SECRET not in str(err.value) and "MY_EMBED_KEY" in str(err.value)
    assert len(server.requests) == 1  # 401 is not retried


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_server_down_fails_at_once_naming_base_url() -> None:
    url = f"http://127.0.0.1:{_closed_port()}/v1"
    e = OpenAIEmbedder(url, "m", max_retries=3)
    start = time.perf_counter()
    with pytest.raises(BioragError, match=r"embed\.base_url") as err:
        e.embed(["x"])
    assert time.perf_counter() - start < 2.0  # no retries with backoff: nothing listens
    assert "cannot connect" in str(err.value) and "\n" not in str(err.value)


def _one_line_error(e: OpenAIEmbedder) -> str:
    with pytest.raises(BioragError) as err:
        e.embed(["x"])
    msg = str(err.value)
    assert "\n" not in msg and len(msg) < 400
    return msg


HTML = "<!DOCTYPE html>\n<html><head><title>Welcome</title></head>\n<body>hi</body></html>"


def test_html_page_names_base_url(server: FakeServer) -> None:
    e = OpenAIEmbedder(server.url, "m", max_retries=0)
    server.fail_next = [(200, "text/html; charset=utf-8", HTML)]
    msg = _one_line_error(e)
    assert "embed.base_url" in msg and "web page" in msg
    server.fail_next = [(404, "text/html", HTML)]
    msg = _one_line_error(e)
    assert "embed.base_url" in msg and "not an OpenAI-compatible" in msg


def test_unknown_model_names_embed_model(server: FakeServer) -> None:
    e = OpenAIEmbedder(server.url, "no-such-model", max_retries=2)
    body = {
        "error": {
            "message": "The model `no-such-model` does not exist.",
            "type": "invalid_request_error",
            "code": "model_not_found",
        }
    }
    server.fail_next = [(404, "application/json", json.dumps(body))]
    msg = _one_line_error(e)
    assert "embed.model 'no-such-model'" in msg and "does not exist" in msg
    server.fail_next = [(404, "application/json", '{"error": "model \\"x\\" not found"}')]
    assert "embed.model" in _one_line_error(e)  # Ollama's shape
    assert len(server.requests) == 2  # not retried


def test_llama_server_refusals_are_explained(server: FakeServer) -> None:
    e = OpenAIEmbedder(server.url, "m", max_retries=3)
    no_embed = {
        "error": {
            "code": 501,
            "message": "This server does not support embeddings. Start it with `--embeddings`",
            "type": "not_supported_error",
        }
    }
    server.fail_next = [(501, "application/json", json.dumps(no_embed))]
    assert "--embeddings --pooling mean" in _one_line_error(e)
    too_long = {
        "error": {
            "code": 500,
            "message": "input (1030 tokens) is too large to process. increase the physical "
            "batch size (current batch size: 512)",
            "type": "server_error",
        }
    }
    server.fail_next = [(500, "application/json", json.dumps(too_long))]
    msg = _one_line_error(e)
    assert "-ub" in msg and "chunking.chunk_tokens" in msg
    assert len(server.requests) == 2  # a too-long text is not retried


def test_llama_server_response_shape_is_normalized(server: FakeServer, tmp_path) -> None:
    """llama-server's /v1/embeddings: data in order, usage, unnormalized vectors."""
    vec = [3.0, 4.0, 0.0, 12.0]
    body = {
        "model": "m",
        "object": "list",
        "usage": {"prompt_tokens": 4, "total_tokens": 4},
        "data": [
            {"embedding": vec, "index": 0, "object": "embedding"},
            {"embedding": [-x for x in vec], "index": 1, "object": "embedding"},
        ],
    }
    server.fail_next = [(200, "application/json", json.dumps(body))]
    e = OpenAIEmbedder(server.url, "m", state_dir=tmp_path)
    v = e.embed(["a", "b"])
    np.testing.assert_allclose(v[0], np.array(vec) / 13.0, atol=1e-6)
    np.testing.assert_allclose(v[1], -np.array(vec) / 13.0, atol=1e-6)
    assert e.dim == 4 and e.probes == 0 and len(server.requests) == 1
    per_token = {"data": [{"embedding": [[1.0, 2.0], [3.0, 4.0]], "index": 0}]}
    server.fail_next = [(200, "application/json", json.dumps(per_token))]
    assert "--pooling mean" in _one_line_error(e)


def test_dimension_is_remembered_across_processes(server: FakeServer, tmp_path) -> None:
    first = OpenAIEmbedder(server.url, "m", state_dir=tmp_path)
    first.embed(["abc", "de"])  # learnt from a real batch: no probe
    assert (first.dim, first.probes, len(server.requests)) == (3, 0, 1)
    later = OpenAIEmbedder(server.url, "m", state_dir=tmp_path)  # a new process
    assert later.dim == 3 and later.probes == 0 and len(server.requests) == 1
    other = OpenAIEmbedder(server.url, "other-model", state_dir=tmp_path)
    assert other.dim == 3 and other.probes == 1 and len(server.requests) == 2
    assert OpenAIEmbedder(server.url, "other-model", state_dir=tmp_path).dim == 3
    assert len(server.requests) == 2
    no_state = OpenAIEmbedder(server.url, "m")
    assert no_state.dim == 3 and no_state.probes == 1


def test_a_changed_dimension_is_a_clear_error(server: FakeServer, tmp_path) -> None:
    e = OpenAIEmbedder(server.url, "m", state_dir=tmp_path)
    (tmp_path / "openai_dims.json").write_text(json.dumps({f"{e.url} m": 5}))
    assert e.dim == 5 and not server.requests
    with pytest.raises(BioragError, match=r"embed\.model 'm'"):
        e.embed(["x"])
    assert OpenAIEmbedder(server.url, "m", state_dir=tmp_path).dim == 3  # corrected


def test_cached_embedder_in_a_new_process_sends_nothing(server: FakeServer, tmp_path) -> None:
    """An index opened again (dimension check, cached query) costs no request."""
    from biorag.config import EmbedSettings
    from biorag.embed.factory import build_embedder

    settings = EmbedSettings(backend="openai", base_url=server.url, model="m")
    build_embedder(settings, tmp_path).embed(["metformin", "aspirin"])
    assert len(server.requests) == 1
    again = build_embedder(settings, tmp_path)
    assert again.dim == 3
    assert again.embed_query("aspirin").shape == (3,)
    assert len(server.requests) == 1


def test_timeouts_connect_fast_read_scaled_with_the_batch(server: FakeServer) -> None:
    e = OpenAIEmbedder(server.url, "m", timeout_s=30, per_text_timeout_s=0.5)
    t = e.timeouts.for_request(64)
    assert t.connect == 5.0 and t.read == 30 + 32
    slow = OpenAIEmbedder(server.url, "m", timeout_s=0.3, per_text_timeout_s=0, max_retries=0)
    server.delay = 1.0
    msg = _one_line_error(slow)
    assert "embed.batch_size" in msg and "failed after 1 attempts" in msg


def test_embeddings_url() -> None:
    assert embeddings_url("http://h:8080") == "http://h:8080/v1/embeddings"
    assert embeddings_url("http://h:8080/v1/") == "http://h:8080/v1/embeddings"
    assert embeddings_url("https://api.x.com/openai/v1") == "https://api.x.com/openai/v1/embeddings"
