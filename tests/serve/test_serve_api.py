"""The HTTP API against the app in process (httpx over ASGI): answers with their evidence,
keys, limits, and JSON errors for bad input."""

from __future__ import annotations

import asyncio
import json

import httpx
import pytest

pytest.importorskip("fastapi")

from biorag.config import Settings
from biorag.runtime import Runtime
from biorag.serve.app import ServerConfig, create_app

JSON = {"content-type": "application/json"}
DOCS = [
    {"id": "1001", "text": "Vitamin D supplementation did not reduce fracture risk in adults."},
    {"id": "1002", "text": "Atorvastatin lowers LDL cholesterol and cardiovascular events."},
    {"id": "1003", "text": "<script>alert('x')</script> Metformin lowers blood glucose."},
]


@pytest.fixture
def index(index_of):
    return index_of(DOCS, "toy")


def client_for(tmp_path, hash_embedder, index, **config) -> httpx.AsyncClient:
    settings = Settings(home=str(tmp_path / "home"))
    rt = Runtime(settings, [index], embedder=hash_embedder)
    app = create_app(settings, ServerConfig(index_paths=[index], **config), runtime=rt)
    return httpx.AsyncClient(
        transport=httpx.ASGITransport(app=app, raise_app_exceptions=False), base_url="http://t"
    )


async def test_ask_returns_a_cited_answer_with_its_evidence(tmp_path, hash_embedder, index):
    async with client_for(tmp_path, hash_embedder, index) as c:
        r = await c.post("/v1/ask", json={"question": "Does vitamin D reduce fracture risk?",
                                          "options": {"A": "yes", "B": "no"}})  # fmt: skip
        assert r.status_code == 200, r.text
        ans = r.json()
        assert ans["answer"] in {"A", "B"} and ans["evidence"]
        assert ans["evidence"][0]["kind"] == "chunk" and ans["evidence"][0]["source_id"] == "1001"
        cited = {c for s in ans["sentences"] for c in s["chunk_ids"]}
        assert cited and cited <= {e["chunk_id"] for e in ans["evidence"]}
        assert ans["accounting"]["wall_s"] > 0
        doc = (await c.get("/v1/documents/1001")).json()
        assert doc["source_id"] == "1001" and doc["corpus"] == "toy" and "Vitamin D" in doc["text"]
        hits = (await c.post("/v1/retrieve", json={"query": "LDL cholesterol", "k": 2})).json()
        assert hits["passages"][0]["source_id"] == "1002"
        assert (await c.get("/ready")).json() == {"ready": True, "indexes": ["toy"]}


async def test_bad_input_is_a_json_4xx_never_a_500(tmp_path, hash_embedder, index):
    async with client_for(tmp_path, hash_embedder, index, max_body_bytes=3000) as c:
        cases = [
            (await c.post("/v1/ask", content=b"{not json", headers=JSON), 422),
            (await c.post("/v1/ask", json={"question": "   "}), 422),
            (await c.post("/v1/ask", json={"question": "x" * 2001}), 422),
            (await c.post("/v1/ask", json={"question": "q?", "method": "nope"}), 400),
            (await c.post("/v1/ask", json={"question": "q?", "surprise": 1}), 422),
            (await c.post("/v1/ask", json={"question": "q?", "method_options": {"k": "a"}}), 400),
            (await c.post("/v1/ask", json={"question": "q?", "method": "claims",
                                           "method_options": {"top_k": "x"}}), 400),
            (await c.post("/v1/ask", json={"question": "q?", "method": "raptor", "stream": True,
                                           "method_options": {"summary_tokens": "x"}}), 400),
            (await c.post("/v1/retrieve", json={"query": "q", "k": 10_000}), 422),
            (await c.post("/v1/ask", content=b"x" * 5000, headers=JSON), 413),
            (await c.get("/v1/documents/nope"), 404),
        ]  # fmt: skip
        for r, status in cases:
            assert r.status_code == status, (r.status_code, r.text)
            err = r.json()["error"]
            assert err["message"] and "Traceback" not in r.text
        unknown = cases[3][0].json()["error"]["message"]
        assert "unknown method 'nope'" in unknown and "retrieve-read" in unknown


async def test_keys_guard_the_api_but_not_the_page(tmp_path, hash_embedder, index):
    async with client_for(tmp_path, hash_embedder, index, api_keys=frozenset({"k1"})) as c:
        assert (await c.get("/v1/methods")).status_code == 401
        bad = await c.get("/v1/methods", headers={"Authorization": "Bearer nope"})
        assert bad.status_code == 401 and "k1" not in bad.text
        ok = await c.get("/v1/methods", headers={"Authorization": "Bearer k1"})
        assert ok.status_code == 200 and "claims" in ok.json()["methods"]
        page = await c.get("/")
        assert page.status_code == 200 and '<form id="ask"' in page.text
        assert (await c.get("/health")).json() == {"status": "ok"}


async def test_asks_beyond_the_slots_wait_and_a_full_queue_refuses_with_retry_after(
    tmp_path, hash_embedder, index
):
    async with client_for(tmp_path, hash_embedder, index, max_concurrent_asks=1) as c:
        asks = [c.post("/v1/ask", json={"question": f"Does metformin lower glucose {i}?"})
                for i in range(6)]  # fmt: skip
        replies = await asyncio.gather(*asks)
    assert [r.status_code for r in replies] == [200] * 6  # queued, not refused
    async with client_for(tmp_path, hash_embedder, index, max_concurrent_asks=1,
                          max_queued_asks=0) as c:  # fmt: skip
        asks = [c.post("/v1/ask", json={"question": f"Does metformin lower glucose {i}?"})
                for i in range(6)]  # fmt: skip
        replies = await asyncio.gather(*asks)
    codes = sorted(r.status_code for r in replies)
    assert codes[0] == 200 and set(codes) <= {200, 503}
    for r in replies:
        if r.status_code == 503:
            assert r.headers["retry-after"] == "2" and r.json()["error"]["type"] == "busy"


async def test_openai_chat_completions_carry_citations_and_evidence(tmp_path, hash_embedder, index):
    async with client_for(tmp_path, hash_embedder, index) as c:
        r = await c.post("/v1/chat/completions", json={
            "model": "retrieve-read",
            "messages": [{"role": "system", "content": "be brief"},
                         {"role": "user", "content": "What lowers LDL cholesterol?"}],
        })  # fmt: skip
        assert r.status_code == 200, r.text
        body = r.json()
        assert body["object"] == "chat.completion" and body["model"] == "biorag:retrieve-read"
        content = body["choices"][0]["message"]["content"]
        assert "[1]" in content and "Sources:" in content and "PMID 1002" in content
        assert body["evidence"][0]["source_id"] == "1002"
        streamed = await c.post("/v1/chat/completions", json={
            "messages": [{"role": "user", "content": "What lowers LDL cholesterol?"}],
            "stream": True})  # fmt: skip
        assert streamed.headers["content-type"].startswith("text/event-stream")
        lines = [ln[6:] for ln in streamed.text.split("\n\n") if ln.startswith("data: ")]
        assert lines[-1] == "[DONE]"
        chunks = [json.loads(ln) for ln in lines[:-1]]
        assert {ch["object"] for ch in chunks} == {"chat.completion.chunk"}
        assert chunks[0]["choices"][0]["delta"] == {"role": "assistant"}
        text = "".join(ch["choices"][0]["delta"].get("content", "") for ch in chunks)
        assert text == content  # the same cited answer, sent in pieces
        last = chunks[-1]
        assert last["choices"][0]["finish_reason"] == "stop"
        assert last["evidence"] == body["evidence"]
        assert len(chunks) > 3 and last["model"] == "biorag:retrieve-read"


def sse_events(text: str) -> list[tuple[str, dict]]:
    out = []
    for block in text.strip().split("\n\n"):
        fields = dict(line.split(": ", 1) for line in block.splitlines() if ": " in line)
        if "event" in fields:
            out.append((fields["event"], json.loads(fields["data"])))
    return out


async def test_a_streamed_ask_sends_its_stages_then_the_result(tmp_path, hash_embedder, index):
    async with client_for(tmp_path, hash_embedder, index) as c:
        ask = {"question": "Does vitamin D reduce fracture risk?", "method": "claims"}
        r = await c.post("/v1/ask", json={**ask, "stream": True})
        assert r.status_code == 200 and r.headers["content-type"].startswith("text/event-stream")
        events = sse_events(r.text)
        stages = [(d["stage"], d["status"]) for kind, d in events if kind == "stage"]
        order = ["retrieve", "extract", "graph", "summarize", "answer", "verify"]
        assert [s for s, st in stages if st == "started"] == order
        assert [s for s, st in stages if st == "finished"] == order
        kind, result = events[-1]
        assert kind == "result" and result["method"] == "claims" and result["evidence"]
        whole = (await c.post("/v1/ask", json=ask)).json()
        assert result["answer_text"] == whole["answer_text"]
        bad = await c.post("/v1/ask", json={**ask, "method": "nope", "stream": True})
        assert bad.status_code == 400 and "unknown method" in bad.json()["error"]["message"]


async def test_a_streamed_ask_that_fails_ends_with_an_error_event(
    tmp_path, hash_embedder, index, monkeypatch
):
    from biorag.methods.retrieve_read import RetrieveRead

    async def broken(self, question):
        raise RuntimeError("secret internals")

    monkeypatch.setattr(RetrieveRead, "answer", broken)
    async with client_for(tmp_path, hash_embedder, index) as c:
        r = await c.post("/v1/ask", json={"question": "q?", "stream": True})
        kind, data = sse_events(r.text)[-1]
        assert kind == "error" and data["type"] == "internal" and "secret" not in r.text
        ok = await c.post("/v1/ask", json={"question": "q?", "method": "closed-book"})
        assert ok.status_code == 200  # the slot was given back
        whole = await c.post("/v1/ask", json={"question": "q?"})
        assert whole.status_code == 500 and "secret" not in whole.text
        metrics = (await c.get("/metrics")).text
        assert 'route="/v1/ask",status="500"} 1.0' in metrics


def test_the_page_renders_document_text_as_text():
    """The page puts documents and answers into the DOM as text: no innerHTML anywhere."""
    from importlib import resources

    script = resources.files("biorag.serve").joinpath("page/page.js").read_text("utf-8")
    assert "innerHTML" not in script and "outerHTML" not in script
    assert "insertAdjacentHTML" not in script and "document.write" not in script
    assert script.count("textContent") >= 5


def test_serving_beyond_loopback_needs_keys(tmp_path):
    from biorag.errors import BioragError
    from biorag.serve.auth import check_exposure, load_keys

    check_exposure("127.0.0.1", frozenset())
    with pytest.raises(BioragError, match="anyone on the network"):
        check_exposure("0.0.0.0", frozenset())
    check_exposure("0.0.0.0", frozenset({"k"}))
    keys_file = tmp_path / "keys"
    keys_file.write_text("# team keys\nalpha\n\n beta \n")
    assert load_keys(keys_file, environ={"BIORAG_SERVER_API_KEYS": "gamma, ,delta"}) == {
        "alpha", "beta", "gamma", "delta"}  # fmt: skip


async def test_requests_cannot_choose_models_servers_or_storage(tmp_path, hash_embedder, index):
    """A request naming a model server of its own could have the server send it a key."""
    async with client_for(tmp_path, hash_embedder, index) as c:
        for key, value in [
            ("reasoning_model", {"backend": "openai", "base_url": "http://evil/v1"}),
            ("kg", str(tmp_path)),
            ("backend", "neo4j"),
        ]:
            r = await c.post("/v1/ask", json={"question": "q?", "method_options": {key: value}})
            assert r.status_code == 422 and "server's configuration" in r.text, (key, r.text)
        huge = await c.post("/v1/ask", json={"question": "q?", "method_options": {"k": 10**9}})
        assert huge.status_code == 422 and "at most 100 passages" in huge.text
        big = {"summary_tokens": 10**9}
        huge = await c.post("/v1/ask", json={"question": "q?", "method_options": big})
        assert huge.status_code == 422 and "limit" in huge.text


async def test_defaults_limits_and_failures_all_answer_in_json(tmp_path, hash_embedder, index):
    settings = Settings.model_validate({
        "home": str(tmp_path / "home"),
        "llm": {"backend": "openai", "base_url": "http://127.0.0.1:9/v1", "model": "m",
                "max_retries": 0, "cache": False},
    })  # fmt: skip
    rt = Runtime(settings, [index], embedder=hash_embedder)
    config = ServerConfig(index_paths=[index], default_method="closed-book", max_body_bytes=500)
    app = create_app(settings, config, runtime=rt)
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://t") as c:
        down = await c.post("/v1/ask", json={"question": "Does X?", "options": {"A": "y"}})
        assert down.status_code == 503 and down.headers["retry-after"] == "5"
        assert (
            down.json()["error"]["type"] == "model_unavailable" and "127.0.0.1:9" not in down.text
        )

        async def chunks():  # no content-length: counted as it arrives
            yield b'{"question": "'
            yield b"x" * 1000
            yield b'"}'

        chunked = await c.post("/v1/ask", content=chunks(), headers=JSON)
        assert chunked.status_code == 413 and chunked.json()["error"]["type"] == "too_large"
        long_chat = await c.post("/v1/chat/completions", content=json.dumps(
            {"messages": [{"role": "user", "content": "q" * 400}]}), headers=JSON)  # fmt: skip
        assert long_chat.status_code != 500
        missing = await c.get("/v1/nowhere")
        assert missing.status_code == 404 and missing.json()["error"]["type"] == "not_found"


async def test_the_default_method_and_trusted_hosts(tmp_path, hash_embedder, index):
    async with client_for(tmp_path, hash_embedder, index, default_method="closed-book") as c:
        r = await c.post("/v1/ask", json={"question": "Does X?", "options": {"A": "y", "B": "n"}})
        assert r.status_code == 200 and r.json()["method"] == "closed-book"
    async with client_for(tmp_path, hash_embedder, index, allowed_hosts=["127.0.0.1"]) as c:
        assert (await c.get("/health")).status_code == 400  # Host: t, as a rebinding page sends


async def test_metrics_count_requests_by_route_and_asks_by_method(tmp_path, hash_embedder, index):
    async with client_for(tmp_path, hash_embedder, index) as c:
        await c.post("/v1/ask", json={"question": "Does vitamin D reduce fracture risk?"})
        await c.get("/v1/documents/1001")
        await c.get("/v1/documents/nope")
        r = await c.get("/metrics")
        assert r.status_code == 200 and r.headers["content-type"].startswith("text/plain")
        text = r.text
    ask = 'biorag_http_requests_total{method="POST",route="/v1/ask",status="200"} 1.0'
    assert ask in text
    # routes by their template: a client's paths do not make new series
    assert 'route="/v1/documents/{key_}",status="200"} 1.0' in text
    assert 'route="/v1/documents/{key_}",status="404"} 1.0' in text
    assert 'biorag_asks_total{method="retrieve-read",outcome="ok"} 1.0' in text
    assert "biorag_asks_in_flight 0.0" in text and 'biorag_jobs{status="done"} 0.0' in text
    assert 'biorag_llm_tokens_total{kind="prompt"} 0.0' in text  # the no-LLM floor


def test_the_rate_limit_is_a_bucket_per_key():
    from fastapi import HTTPException

    from biorag.serve.auth import RateLimit

    now = [0.0]
    limit = RateLimit(per_minute=3, clock=lambda: now[0])
    for _ in range(3):
        limit.check("alice")
    with pytest.raises(HTTPException) as e:
        limit.check("alice")
    assert e.value.status_code == 429 and e.value.headers == {"Retry-After": "20"}
    limit.check("bob")  # another key has its own bucket
    now[0] = 20.0  # one call a 20 s comes back
    limit.check("alice")
    with pytest.raises(HTTPException):
        limit.check("alice")
    RateLimit(per_minute=0).check("anyone")  # 0: no limit


async def test_over_the_rate_limit_is_a_json_429(tmp_path, hash_embedder, index):
    keys = frozenset({"k1", "k2"})
    async with client_for(tmp_path, hash_embedder, index, api_keys=keys,
                          rate_limit_per_minute=2) as c:  # fmt: skip
        k1, k2 = ({"Authorization": f"Bearer {k}"} for k in ("k1", "k2"))
        codes = [(await c.get("/v1/methods", headers=k1)).status_code for _ in range(3)]
        assert codes == [200, 200, 429]
        r = await c.get("/v1/methods", headers=k1)
        assert r.json()["error"]["type"] == "rate_limited" and int(r.headers["retry-after"]) > 0
        assert (await c.get("/v1/methods", headers=k2)).status_code == 200
        assert (await c.get("/health")).status_code == 200  # not an API call
