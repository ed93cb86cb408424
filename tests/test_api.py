from biorag import BioRAG
from biorag.config import Settings
from biorag.runtime import Runtime


def test_facade_add_search_ask_remove(tmp_path, corpus_file, hash_embedder):
    rt = Runtime(Settings(home=str(tmp_path / "home")), embedder=hash_embedder)
    rag = BioRAG(tmp_path / "idx", runtime=rt)
    report = rag.add([corpus_file])
    assert report["documents_new"] == 4
    hits = rag.search("atorvastatin LDL", k=2, retriever="bm25")
    assert hits[0]["source_id"] == "1002"
    ans = rag.ask("Does vitamin D reduce fracture risk?", options={"A": "yes", "B": "no"})
    assert ans.answer in {"A", "B"} and ans.evidence
    rag.remove(["1002"])
    assert all(h["source_id"] != "1002" for h in rag.search("atorvastatin LDL", k=4))
    rag.close()


def test_import_is_light():
    import subprocess
    import sys

    code = "import sys, biorag; print(any(m in sys.modules for m in ('torch', 'faiss', 'bm25s')))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_facade_reuses_and_closes_its_llm_http_clients(tmp_path, hash_embedder, monkeypatch):
    """Every ask runs on one event loop: one HTTP client per model, all closed by close()."""
    import json
    import threading
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
    from types import SimpleNamespace

    import httpx

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            out = json.dumps(
                {
                    "model": body["model"],
                    "choices": [{"message": {"content": "Yes"}, "finish_reason": "stop"}],
                    "usage": {},
                }
            ).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(out)))
            self.end_headers()
            self.wfile.write(out)

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    opened: list[httpx.AsyncClient] = []
    init = httpx.AsyncClient.__init__

    def counting_init(self, *a, **kw):
        opened.append(self)
        init(self, *a, **kw)

    monkeypatch.setattr(httpx.AsyncClient, "__init__", counting_init)
    url = f"http://127.0.0.1:{server.server_port}/v1"
    llm = {"backend": "openai", "base_url": url, "model": "main", "cache": False}
    no_hits = SimpleNamespace(search=lambda *a, **kw: [[]], close=lambda: None)
    st = Settings(home=str(tmp_path / "home"), llm=llm)
    rag = BioRAG(tmp_path / "idx", runtime=Runtime(st, embedder=hash_embedder, searcher=no_hits))
    try:
        for _ in range(3):
            rag.ask("Does KRX1 drive fibrosis?", {"A": "yes", "B": "no"}, "iprar",
                    reasoning_model={"model": "r1"}, exact_answer=False)  # fmt: skip
        rag.close()
    finally:
        server.shutdown()
        server.server_close()
    assert len(opened) == 2  # the main model and the reasoning model, each once
    assert all(c.is_closed for c in opened)
