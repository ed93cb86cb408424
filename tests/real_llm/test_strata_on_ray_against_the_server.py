"""`biorag strata build --executor ray` with the real model: the Ray workers extract the papers
and normalize their mentions against a vocabulary, each asking llama-server for the LLM's
choices; the accounting the workers send back is the server's."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

from devkit.servers import LlamaServer
from devkit.strata_vocab import MESH_XML, UNIPROT_TSV
from tests.executor.cli_runs import BIORAG
from tests.real_llm.conftest import llm_env
from tests.strata.conftest import PAPERS

N = len(PAPERS)


def test_strata_normalized_by_ray_workers_against_the_server(
    llama: LlamaServer, ray_cluster: Any, tmp_path: Path
) -> None:
    papers = tmp_path / "papers.jsonl"
    papers.write_text("".join(json.dumps(p) + "\n" for p in PAPERS), encoding="utf-8")
    (tmp_path / "mesh.xml").write_text(MESH_XML, encoding="utf-8")
    (tmp_path / "uniprot.tsv").write_text(UNIPROT_TSV, encoding="utf-8")
    env = llm_env(llama.url, tmp_path / "home", BIORAG_LLM_CACHE="false",
                  BIORAG_EXECUTOR_BATCH_SIZE="2")  # fmt: skip
    before = llama.settled_metrics()
    cmd = [*BIORAG, "strata", "build", "--papers", str(papers),
           "--mesh", str(tmp_path / "mesh.xml"), "--uniprot", str(tmp_path / "uniprot.tsv"),
           "--out", str(tmp_path / "s"), "--json",
           "--executor", "ray", "--ray-address", ray_cluster.address]  # fmt: skip
    r = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=900, check=False)
    assert r.returncode == 0, r.stderr[-3000:]
    report = json.loads(r.stdout)
    assert report["papers"] == N and report["mode"] == "llm"
    extracted = report["executor"]["workers"]
    normalized = report["normalize_executor"]["workers"]
    assert sum(w["rows"] for w in extracted.values()) == N
    assert sum(w["rows"] for w in normalized.values()) > 0
    # the LLM's choices (the mentions without an exact match) were asked on the workers and
    # each counted once in the report
    stages = report["accounting"]["stages"]
    asked = report["llm_yield"]["strata_normalize"]["inputs"]
    assert stages.get("strata_normalize", {}).get("calls", 0) == asked
    print(f"normalized on the workers: {report['normalized']}, LLM choices asked: {asked}")
    assert stages["strata_triplets"]["calls"] >= N
    total = report["accounting"]["total"]
    generated = llama.settled_metrics()["tokens_predicted_total"] - before["tokens_predicted_total"]
    slack = 48 * total.get("loops_stopped", 0)  # generated after a closed stream's last chunk
    assert total["failures"] == 0
    assert total["completion_tokens"] <= generated <= total["completion_tokens"] + slack
