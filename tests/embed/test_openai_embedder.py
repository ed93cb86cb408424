"""OpenAIEmbedder against a real HTTP server on 127.0.0.1."""

from __future__ import annotations

import json
import threading
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
    index order; ``fail_next`` status codes are answered first."""

    def __init__(self) -> None:
        self.requests: list[dict[str, Any]] = []
        self.fail_next: list[int] = []
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                server.requests.append(
                    {"path": self.path, "auth": self.headers.get("Authorization"), "body": body}
                )
                if server.fail_next:
                    self.send_response(server.fail_next.pop(0))
                    self.end_headers()
                    self.wfile.write(b'{"error": "nope"}')
                    return
                data = [
                    {"object": "embedding", "index": i, "embedding": [float(len(t)), 1.0, 2.0]}
                    for i, t in enumerate(body["input"])
                ][::-1]
                out = json.dumps({"object": "list", "data": data, "model": body["model"]})
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.end_headers()
                self.wfile.write(out.encode())

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


def test_unreachable_endpoint() -> None:
    e = OpenAIEmbedder("http://127.0.0.1:9/v1", "m", max_retries=0, timeout_s=2)
    with pytest.raises(BioragError, match="failed after 1 attempts"):
        e.embed(["x"])


def test_embeddings_url() -> None:
    assert embeddings_url("http://h:8080") == "http://h:8080/v1/embeddings"
    assert embeddings_url("http://h:8080/v1/") == "http://h:8080/v1/embeddings"
    assert embeddings_url("https://api.x.com/openai/v1") == "https://api.x.com/openai/v1/embeddings"
