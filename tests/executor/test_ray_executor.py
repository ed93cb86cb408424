"""The Ray executor against a real local cluster (a head and two one-CPU workers on loopback):
an index embedded on it equals one embedded locally, a killed build resumes, and the work is
spread over both workers."""

from __future__ import annotations

import json
import os
import random
import sqlite3
import subprocess

import numpy as np
import pytest
from tests.executor.cli_runs import BIORAG, kill_midway

from biorag.config import EmbedSettings, ExecutorSettings
from biorag.corpus.models import Document
from biorag.embed.factory import build_embedder
from biorag.errors import BioragError
from biorag.retrieve.index import IndexDir
from biorag.retrieve.search import Searcher

WORDS = (
    "metformin insulin glucose statin cholesterol aspirin platelet bleeding kidney liver tumour "
    "breast lung cancer trial cohort dose risk mortality infection vaccine antibody receptor"
).split()


def docs(n: int) -> list[Document]:
    rng = random.Random(5)
    return [
        Document.create(
            source_id=f"p{i}", text=" ".join(rng.choice(WORDS) for _ in range(12)) + "."
        )
        for i in range(n)
    ]


def vectors(path) -> dict[str, np.ndarray]:
    db = sqlite3.connect(path / "corpus.sqlite")
    try:
        return {
            cid: np.frombuffer(blob, np.float32)
            for cid, blob in db.execute("SELECT id, vector FROM chunks WHERE vector IS NOT NULL")
        }
    finally:
        db.close()


def _embedded_so_far(path) -> int:
    """Vectors stored by a build that is running (0 while its store has no tables yet)."""
    try:
        return len(vectors(path)) if (path / "corpus.sqlite").exists() else 0
    except sqlite3.OperationalError:
        return 0


@pytest.fixture(scope="module")
def local_index(tmp_path_factory):
    path = tmp_path_factory.mktemp("local") / "idx"
    with IndexDir(path, build_embedder(EmbedSettings())) as idx:
        idx.add(docs(120))
    return path


def test_an_index_embedded_on_ray_equals_the_local_one(ray_cluster, local_index, tmp_path):
    from biorag.executor.ray_executor import RayExecutor

    ex = RayExecutor(
        ExecutorSettings(kind="ray", ray_address=ray_cluster.address, ray_workers=2, batch_size=16)
    )
    try:
        with IndexDir(
            tmp_path / "idx", build_embedder(EmbedSettings()), executor=ex,
            embed_settings=EmbedSettings(),
        ) as idx:  # fmt: skip
            report = idx.add(docs(120))
    finally:
        ex.close()
    workers = report.executor["workers"]
    assert len(workers) == 2 and sum(w["rows"] for w in workers.values()) == 120
    assert len({w.split("/")[0] for w in workers}) == 2  # one actor on each worker node
    ray_vecs, local_vecs = vectors(tmp_path / "idx"), vectors(local_index)
    assert ray_vecs.keys() == local_vecs.keys()
    assert max(float(np.abs(ray_vecs[c] - local_vecs[c]).max()) for c in ray_vecs) < 1e-5
    emb = build_embedder(EmbedSettings())
    queries = ["metformin glucose", "lung cancer trial", "vaccine antibody infection"]
    got, want = Searcher(tmp_path / "idx", emb), Searcher(local_index, emb)
    try:
        for q in queries:
            a = [p.chunk_id for p in got.search([q], 10, "dense")[0]]
            b = [p.chunk_id for p in want.search([q], 10, "dense")[0]]
            assert a == b, q
    finally:
        got.close()
        want.close()


def test_a_build_killed_on_ray_resumes_with_what_is_missing(ray_cluster, local_index, tmp_path):
    corpus = tmp_path / "c.jsonl"
    corpus.write_text(
        "".join(json.dumps({"id": d.source_id, "text": d.text}) + "\n" for d in docs(120))
    )
    env = {**os.environ, "BIORAG_HOME": str(tmp_path / "home"), "BIORAG_EXECUTOR_BATCH_SIZE": "8"}
    out = tmp_path / "idx"
    cmd = [*BIORAG, "index", "build", "--corpus", str(corpus), "--out", str(out),
           "--executor", "ray", "--ray-address", ray_cluster.address, "--json"]  # fmt: skip
    kill_midway(cmd, env, lambda: _embedded_so_far(out), 1, 120, timeout=240)
    first = len(vectors(out))
    assert 0 < first < 120
    done = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    report = json.loads(done.stdout)
    assert report["chunks_embedded"] == 120 - first and report["chunks_total"] == 120
    ray_vecs, local_vecs = vectors(out), vectors(local_index)
    assert max(float(np.abs(ray_vecs[c] - local_vecs[c]).max()) for c in ray_vecs) < 1e-5


def test_an_unreachable_cluster_is_named():
    pytest.importorskip("ray")
    from biorag.executor.ray_executor import RayExecutor

    with pytest.raises(BioragError) as info:
        RayExecutor(ExecutorSettings(kind="ray", ray_address="127.0.0.1:9"))
    assert "executor.ray_address" in str(info.value) or info.value.param == "executor.ray_address"
