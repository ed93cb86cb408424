"""BioASQ snippet measures end to end: ``biorag eval`` over an index of the pooled snippets."""

from __future__ import annotations

import json

import pytest
from tests.eval.test_metrics_snippets import BIOASQ


def test_eval_reports_snippet_measures(cli, tmp_path) -> None:
    data = tmp_path / "11B1_golden.json"
    data.write_text(json.dumps(BIOASQ))
    built = cli("index", "build", "--corpus", str(data), "--format", "bioasq", "--out", "idx")
    assert built.exit_code == 0, built.output
    r = cli("eval", "--dataset", "bioasq", "--data", str(data), "--setting", "open",
            "--index", "idx", "--methods", "retrieve-read", "--judge", "off",
            "--out", "run", "--json")  # fmt: skip
    assert r.exit_code == 0, r.output
    scores = json.loads(r.stdout)["methods"]["retrieve-read"]["scores"]
    sn = scores["snippets"]
    # each question's own snippet is among the retrieved chunks (two documents in all); the
    # official reading takes the gold offsets as given, both ends counted: q1's 46 characters
    # are all recalled, q2's gold 0..48 (49, a leading space among them) by the text's 1..47
    assert sn["n"] == 2 and 0 < sn["mean_precision"] <= 1.0
    assert sn["mean_recall"] == pytest.approx((1 + 47 / 49) / 2)
    rec = json.loads((tmp_path / "run" / "predictions.jsonl").read_text().splitlines()[0])
    assert all({"document", "section", "begin", "end"} <= set(s) for s in rec["snippets"])
