from biorag import BioRAG
from biorag.config import Settings


def test_facade_add_search_ask_remove(tmp_path, corpus_file, hash_embedder):
    rag = BioRAG(tmp_path / "idx", Settings(home=str(tmp_path / "home")))
    rag.runtime.__dict__["embedder"] = hash_embedder
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
