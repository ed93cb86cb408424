"""Writes an eval run directory's per-question rows (``questions.json``: one compact row per
method and question, its latest record) beside its metrics, so the figures that rest on a run
keep what they rest on in the repository where ``predictions.jsonl`` (large) is not.

    python benchmarks/question_rows.py benchmarks/results/eval_pubmedqa_open_floor [...]
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from bench_real_llm import question_rows
from biorag.util.files import write_text_atomic


def main(argv: list[str]) -> int:
    if not argv:
        print("usage: python benchmarks/question_rows.py RUN_DIR [RUN_DIR ...]", file=sys.stderr)
        return 2
    for arg in argv:
        run = Path(arg)
        if not (run / "predictions.jsonl").is_file():
            print(f"{run}: no predictions.jsonl (is it an eval run directory?)", file=sys.stderr)
            return 2
        rows = question_rows(run)
        # one row a line: small, and a diff shows which questions changed
        text = (
            "[\n"
            + ",\n".join(
                json.dumps({k: v for k, v in r.items() if v is not None}, separators=(",", ":"))
                for r in rows
            )
            + "\n]\n"
        )
        write_text_atomic(run / "questions.json", text)
        print(f"{run / 'questions.json'}: {len(rows)} rows", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
