"""The near pairs the paraphrase check's threshold was chosen by (biorag.eval.run.near_duplicates).

Data (``../shared/data``, or ``$BIORAG_SHARED_DATA``): the 2,310 BioASQ Task B golden questions of
2019-2023 (``mirage/rawdata/bioasq``: questions re-asked across years, reworded) and the 4,183
MedMCQA dev questions (``mirage/rawdata/medmcqa/data/dev.json``: a question bank's rewordings).
Within each set, every pair of distinct questions (after the exact guard's normalization) whose
question cosine with the bundled all-MiniLM-L6-v2 is >= ``--floor`` (0.84) is listed with the
cosine of "question answer" texts (the answer: BioASQ's first exact answer, yes/no, or the ideal
answer of a summary question; MedMCQA's correct option), and whether the check flags it at
``--threshold`` (0.92). The pairs were read and judged by hand (same question reworded, or a
different question); the script lists them and counts them per cosine band, it does not label.

    python benchmarks/bench_paraphrase_threshold.py [--set bioasq|medmcqa|both] [--floor 0.84]
        [--threshold 0.92] [--threads 2]

About 1 minute for BioASQ and 6 for MedMCQA on two CPU cores (both sets embedded with MiniLM).
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
from pathlib import Path

from _bench import pin_threads

THREADS = pin_threads()

import numpy as np  # noqa: E402

from biorag.embed.st_embedder import SentenceTransformerEmbedder  # noqa: E402
from biorag.kg.provenance import text_hash  # noqa: E402

DATA = Path(os.environ.get("BIORAG_SHARED_DATA", Path(__file__).resolve().parents[2] / "shared"
                           / "data"))  # fmt: skip
BANDS = (0.84, 0.88, 0.90, 0.92, 0.94, 0.96, 1.01)


def bioasq() -> list[tuple[str, str]]:
    out = []
    for f in sorted((DATA / "mirage" / "rawdata" / "bioasq").glob("*/*.json")):
        for q in json.loads(f.read_text(encoding="utf-8"))["questions"]:
            ex, kind = q.get("exact_answer"), q.get("type")
            if kind == "yesno":
                answer = str(ex)
            elif kind in ("factoid", "list"):
                first = ex[0] if isinstance(ex, list) and ex else ex
                answer = str(first[0] if isinstance(first, list) and first else first)
            else:
                ideal = q.get("ideal_answer")
                answer = str(ideal[0] if isinstance(ideal, list) and ideal else ideal)
            out.append((q["body"].strip(), answer))
    return out


def medmcqa() -> list[tuple[str, str]]:
    out = []
    path = DATA / "mirage" / "rawdata" / "medmcqa" / "data" / "dev.json"
    for line in path.read_text(encoding="utf-8").splitlines():
        r = json.loads(line)
        options = [r["opa"], r["opb"], r["opc"], r["opd"]]
        out.append((r["question"].strip(), str(options[r["cop"] - 1]).strip()))
    return out


def pairs(rows: list[tuple[str, str]], emb, floor: float) -> list[tuple[float, float, int, int]]:
    """``(question cosine, question+answer cosine, i, j)`` of the distinct near pairs."""
    q = emb.embed([r[0] for r in rows])
    sims = q @ q.T
    found = [(i, j) for i, j in zip(*np.nonzero(np.triu(sims, 1) >= floor), strict=True)
             if text_hash(rows[i][0]) != text_hash(rows[j][0])]  # fmt: skip
    texts = sorted({f"{rows[k][0]} {rows[k][1]}" for i, j in found for k in (i, j)})
    vec = dict(zip(texts, emb.embed(texts), strict=True))
    out = []
    for i, j in found:
        a, b = vec[f"{rows[i][0]} {rows[i][1]}"], vec[f"{rows[j][0]} {rows[j][1]}"]
        out.append((float(sims[i, j]), float(a @ b), int(i), int(j)))
    return sorted(out, reverse=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--set", choices=("bioasq", "medmcqa", "both"), default="both")
    ap.add_argument("--floor", type=float, default=0.84)
    ap.add_argument("--threshold", type=float, default=0.92)
    ap.add_argument("--threads", default=THREADS)
    args = ap.parse_args()
    if not (DATA / "mirage").is_dir():
        ap.error(f"{DATA / 'mirage'} not found (set BIORAG_SHARED_DATA to the shared data folder)")
    emb = SentenceTransformerEmbedder()
    t = args.threshold
    for name in ("bioasq", "medmcqa") if args.set == "both" else (args.set,):
        rows = bioasq() if name == "bioasq" else medmcqa()
        found = pairs(rows, emb, args.floor)
        print(f"\n## {name}: {len(rows)} questions, {len(found)} near pairs (cosine >= "
              f"{args.floor})\n")  # fmt: skip
        for lo, hi in itertools.pairwise(BANDS):
            band = [p for p in found if lo <= p[0] < hi]
            flagged = sum(1 for p in band if p[0] >= t and p[1] >= t)
            print(f"question cosine [{lo:.2f}, {min(hi, 1):.2f}): {len(band):4d} pairs, "
                  f"{flagged} flagged (question and question+answer >= {t})")  # fmt: skip
        print()
        for cq, cqa, i, j in found:
            flag = "FLAG" if cq >= t and cqa >= t else "    "
            print(f"{flag} q={cq:.3f} qa={cqa:.3f} | {rows[i][0][:90]} [{rows[i][1][:30]}] || "
                  f"{rows[j][0][:90]} [{rows[j][1][:30]}]")  # fmt: skip


if __name__ == "__main__":
    main()
