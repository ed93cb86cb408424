"""What chat front ends and careless clients send (issue #33): content as a list of parts, the
model list read before chatting, a k far over the cap, an offset SQLite cannot hold, and ids that
hold "/": each answered, or refused with a JSON 4xx naming the field."""

from __future__ import annotations

import logging

import pytest

pytest.importorskip("fastapi")

from tests.serve.test_serve_api import client_for

from biorag.corpus.models import Document
from biorag.methods.registry import METHODS
from biorag.retrieve.index import IndexDir

DOCS = [
    {"id": "1001", "text": "Vitamin D supplementation did not reduce fracture risk in adults."},
    {"id": "1002", "text": "Atorvastatin lowers LDL cholesterol and cardiovascular events."},
]


@pytest.fixture
def index(index_of):
    return index_of(DOCS, "toy")


async def test_content_parts_are_read_and_other_parts_refused(tmp_path, hash_embedder, index):
    async with client_for(tmp_path, hash_embedder, index) as c:
        parts = [{"type": "text", "text": "Does atorvastatin lower"},
                 {"type": "text", "text": "LDL cholesterol?"}]  # fmt: skip
        chat = {"model": "retrieve-read", "messages": [{"role": "user", "content": parts}]}
        r = await c.post("/v1/chat/completions", json=chat)
        assert r.status_code == 200, r.text
        assert "1002" in r.json()["choices"][0]["message"]["content"]
        image = [{"type": "image_url", "image_url": {"url": "data:image/png;base64,AA"}}]
        r = await c.post("/v1/chat/completions", json={
            "model": "retrieve-read",
            "messages": [{"role": "system", "content": None},
                         {"role": "user", "content": [*parts, *image]}]})  # fmt: skip
        assert r.status_code == 400
        err = r.json()["error"]["message"]
        assert "messages[1].content[2] is a 'image_url' part" in err


async def test_models_lists_one_model_per_method_default_first(tmp_path, hash_embedder, index):
    async with client_for(tmp_path, hash_embedder, index, default_method="claims") as c:
        body = (await c.get("/v1/models")).json()
    assert body["object"] == "list"
    ids = [m["id"] for m in body["data"]]
    assert ids[0] == "claims" and sorted(ids) == sorted(METHODS)
    assert all(m["object"] == "model" and m["description"] for m in body["data"])


async def test_depth_and_offsets_are_capped_with_a_4xx_naming_the_field(
    tmp_path, hash_embedder, index
):
    async with client_for(tmp_path, hash_embedder, index) as c:
        r = await c.post("/v1/ask", json={"question": "q?", "method": "retrieve-read",
                                          "method_options": {"k": 10_000}})  # fmt: skip
        assert r.status_code == 422 and "k = 10000: at most 100" in r.json()["error"]["message"]
        for offset in ("1e20", str(2**70), "-1"):
            r = await c.get(f"/v1/documents?offset={offset}")
            assert r.status_code == 422, (offset, r.text)
            assert "offset" in r.json()["error"]["message"]
        assert (await c.get("/v1/documents?offset=5")).status_code == 200


async def test_an_id_with_a_slash_is_addressable(tmp_path, hash_embedder, index):
    idx = IndexDir(index, hash_embedder)
    idx.add([Document.create(source_id="10.1000/xyz.123", text="Aspirin and bleeding.")])
    idx.close()
    async with client_for(tmp_path, hash_embedder, index) as c:
        for path in ("/v1/documents/10.1000/xyz.123", "/v1/documents/10.1000%2Fxyz.123"):
            r = await c.get(path)
            assert r.status_code == 200, (path, r.text)
            assert r.json()["source_id"] == "10.1000/xyz.123"
        assert (await c.get("/v1/documents/10.1000/nothing")).status_code == 404
        r = await c.delete("/v1/documents/10.1000%2Fxyz.123")
        assert r.status_code == 202, r.text


async def test_every_response_carries_the_security_headers_refusals_too(
    tmp_path, hash_embedder, index
):
    async with client_for(tmp_path, hash_embedder, index) as c:
        for r in [await c.get("/"), await c.get("/v1/documents/nope"), await c.get("/docs"),
                  await c.post("/v1/ask", json={"question": " "})]:  # fmt: skip
            h = r.headers
            assert h["x-content-type-options"] == "nosniff" and h["x-frame-options"] == "DENY"
            assert h["referrer-policy"] == "no-referrer"
            csp = h["content-security-policy"]
            assert "frame-ancestors 'none'" in csp and "script-src 'self';" in csp
            assert "'unsafe-inline'" not in csp.split("script-src")[1].split(";")[0]
    async with client_for(tmp_path, hash_embedder, index, allowed_hosts=["127.0.0.1"]) as c:
        r = await c.get("/health")  # Host: t, as a rebinding page sends
        assert r.status_code == 400 and r.json()["error"]["type"] == "bad_host"
        assert r.headers["x-frame-options"] == "DENY"


async def test_docs_and_redoc_load_only_vendored_assets(tmp_path, hash_embedder, index):
    async with client_for(tmp_path, hash_embedder, index) as c:
        for page, assets in (("/docs", ("swagger-ui-bundle.js", "swagger-ui.css", "docs.js")),
                             ("/redoc", ("redoc.standalone.js",))):  # fmt: skip
            html = (await c.get(page)).text
            assert "http" not in html.replace('lang="en"', "")  # no CDN, no other origin
            assert "<script>" not in html  # no inline script
            for asset in assets:
                (src,) = [p.split('"')[0] for p in html.split('="')[1:] if asset in p]
                r = await c.get(src)
                assert r.status_code == 200 and len(r.content) > 300, src
        assert (await c.get("/openapi.json")).json()["info"]["title"] == "biorag"


async def test_sources_list_only_cited_passages_and_an_empty_answer_says_why(
    tmp_path, hash_embedder, index
):
    import json
    import re

    import httpx

    from biorag.config import Settings
    from biorag.runtime import Runtime
    from biorag.serve.app import ServerConfig, create_app

    script = tmp_path / "script.json"
    script.write_text(json.dumps([{"stage": "answer", "response": "Atorvastatin lowers LDL [1]."}]))
    settings = Settings.model_validate({"home": str(tmp_path / "home"),
        "llm": {"backend": "mock", "mock_script": str(script), "cache": False}})  # fmt: skip
    rt = Runtime(settings, [index], embedder=hash_embedder)
    app = create_app(settings, ServerConfig(index_paths=[index]), runtime=rt)
    transport = httpx.ASGITransport(app=app, raise_app_exceptions=False)
    async with httpx.AsyncClient(transport=transport, base_url="http://t") as c:
        chat = {"model": "retrieve-read", "messages": [{"role": "user", "content":
                "Does atorvastatin lower LDL cholesterol?"}]}  # fmt: skip
        r = (await c.post("/v1/chat/completions", json=chat)).json()
        content = r["choices"][0]["message"]["content"]
        body, _, sources = content.partition("\n\nSources:\n")
        assert re.findall(r"^\[(\d+)\]", sources, re.M) == ["1"] == re.findall(r"\[(\d+)\]", body)
        assert len(r["evidence"]) == 2 and "1 more retrieved, not cited" in sources
    rt.close()
    async with client_for(tmp_path, hash_embedder, index) as c:
        chat = {"model": "closed-book", "messages": [{"role": "user", "content": "Why?"}]}
        r = (await c.post("/v1/chat/completions", json=chat)).json()
        content = r["choices"][0]["message"]["content"]
        assert content.startswith("(closed-book has no answer: no-LLM floor")


async def test_the_model_and_indexes_are_warmed_before_the_server_is_ready(
    tmp_path, hash_embedder, index, caplog
):
    """The lifespan runs the embedding model once and searches every index before the server
    listens, so no first ask waits for them; a warm-up that fails leaves the server starting."""
    from biorag.config import Settings
    from biorag.runtime import Runtime
    from biorag.serve.app import ServerConfig, create_app

    settings = Settings(home=str(tmp_path / "home"))
    rt = Runtime(settings, [index], embedder=hash_embedder)
    app = create_app(settings, ServerConfig(index_paths=[index]), runtime=rt)
    hash_embedder.calls.clear()
    assert "searcher" not in rt.built()
    async with app.router.lifespan_context(app):
        assert "searcher" in rt.built() and "reranker" in rt.built()
        assert len(hash_embedder.calls) >= 2  # the model itself, then the probe search's query

    class Down:
        model_id, dim = "test:down", 64

        def embed(self, texts, **_):
            raise RuntimeError("the embedding server is not up yet")

    rt = Runtime(settings, [index], embedder=Down())
    app = create_app(settings, ServerConfig(index_paths=[index]), runtime=rt)
    with caplog.at_level(logging.WARNING, logger="biorag.serve"):
        async with app.router.lifespan_context(app):  # starts all the same, and says why
            pass
    assert "warm-up incomplete" in caplog.text and "not up yet" in caplog.text


async def test_documents_are_searched_by_id_or_title_and_wildcards_are_literal(
    tmp_path, hash_embedder, index_of
):
    docs = [{"id": "10.1000/a_b", "title": "Statins and LDL", "text": "Statins lower LDL."},
            {"id": "2002", "title": "Vitamin D", "text": "Vitamin D and bone."},
            {"id": "axb", "title": "Folate", "text": "Folate and the neural tube."}]  # fmt: skip
    index = index_of(docs, "toy")
    async with client_for(tmp_path, hash_embedder, index) as c:
        page = (await c.get("/v1/documents", params={"q": "statins"})).json()
        assert page["matching"] == 1 and page["total"] == 3
        assert [d["source_id"] for d in page["documents"]] == ["10.1000/a_b"]
        assert (await c.get("/v1/documents", params={"q": "2002"})).json()["matching"] == 1
        for literal in ("%", "a%b"):  # LIKE's wildcards match only themselves
            assert (await c.get("/v1/documents", params={"q": literal})).json()["matching"] == 0
        # "_" is no wildcard: "a_b" is not "axb"
        assert (await c.get("/v1/documents", params={"q": "a_b"})).json()["matching"] == 1
        assert "matching" not in (await c.get("/v1/documents")).json()
        r = await c.get("/v1/documents", params={"q": "x" * 201})
        assert r.status_code == 422 and "q" in r.json()["error"]["message"]
