"""Label shares and majority baselines of the benchmark sets, derived from the data.

Every share or majority figure quoted in docs/benchmarks.md comes from this script's output
(``benchmarks/results/label_shares.json``), computed with biorag's own dataset loaders, so the
questions counted are the ones ``biorag eval`` scores::

    python benchmarks/label_shares.py [--data ../shared/data] [--json]

Per set: the number of questions, each gold label's count and share, the majority label and its
share (the accuracy of always answering it). PubMedQA labels are yes/no/maybe; BioASQ yes/no
sets yes/no; multiple-choice sets the gold letter.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections import Counter
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "src"))

from biorag.corpus.datasets import load_dataset  # noqa: E402
from biorag.util.files import write_json_atomic  # noqa: E402

OUT = REPO / "benchmarks" / "results" / "label_shares.json"


def sets(data: Path) -> list[tuple[str, str, Path, dict[str, Any], int | None]]:
    """(label, dataset, path, loader options, first N) of every set the docs quote."""
    pqa = data / "pubmedqa" / "ori_pqal.json"
    bioasq = data / "mirage" / "rawdata" / "bioasq"
    return [
        ("PubMedQA test (500)", "pubmedqa", pqa, {"split": "test"}, None),
        ("PubMedQA dev (500)", "pubmedqa", pqa, {"split": "dev"}, None),
        ("PubMedQA dev, first 100", "pubmedqa", pqa, {"split": "dev"}, 100),
        ("PubMedQA test, first 50", "pubmedqa", pqa, {"split": "test"}, 50),
        ("BioASQ 7b-11b yes/no", "bioasq", bioasq, {"split": "yesno"}, None),
        ("BioASQ 11b yes/no", "bioasq", bioasq / "Task11BGoldenEnriched", {"split": "yesno"}, None),
        (
            "MedMCQA dev single-choice",
            "medmcqa",
            data / "mirage" / "rawdata" / "medmcqa" / "data" / "dev.json",
            {},
            None,
        ),
    ]


def shares(items: list[Any]) -> dict[str, Any]:
    """Counts and shares of the gold labels (option texts where the options are yes/no/maybe)."""
    labels = []
    for it in items:
        gold = it.gold
        text = str((it.options or {}).get(gold, gold)).lower()
        labels.append(text if text in ("yes", "no", "maybe") else str(gold))
    counts = Counter(labels)
    n = len(labels)
    label, top = counts.most_common(1)[0] if counts else ("-", 0)
    return {
        "n": n,
        "counts": dict(sorted(counts.items())),
        "shares": {k: round(v / n, 4) for k, v in sorted(counts.items())},
        "majority": label,
        "majority_share": round(top / n, 4) if n else None,
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", type=Path, default=REPO.parent / "shared" / "data")
    ap.add_argument("--json", action="store_true", help="print the JSON instead of a table")
    args = ap.parse_args()
    if not args.data.is_dir():
        raise SystemExit(f"--data {args.data}: no such folder (the benchmark data, ../shared/data)")
    out: dict[str, Any] = {}
    for label, name, path, opts, first in sets(args.data):
        if not path.exists():
            print(f"{label}: {path} missing, skipped", file=sys.stderr)
            continue
        items = list(load_dataset(name, path, limit=first, **opts).items)
        out[label] = {
            "dataset": name,
            "path": os.path.relpath(path, REPO),
            **opts,
            "first": first,
            **shares(items),
        }
    OUT.parent.mkdir(parents=True, exist_ok=True)
    write_json_atomic(OUT, out)
    if args.json:
        print(json.dumps(out, indent=1))
        return
    print("| set | questions | labels | majority |")
    print("|---|---|---|---|")
    for label, r in out.items():
        parts = ", ".join(f"{k} {v} ({r['shares'][k]:.1%})" for k, v in r["counts"].items())
        print(f"| {label} | {r['n']:,} | {parts} | {r['majority']} {r['majority_share']:.1%} |")


if __name__ == "__main__":
    main()
