"""Running the benchmarks' own evaluators from ``../shared/official/`` (never copied in), and
parsing what they print, for the tests that hold biorag's ``--scoring official`` to them."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import NoReturn

import pytest

SHARED = Path(__file__).resolve().parents[2].parent / "shared"
OFFICIAL = SHARED / "official"
PUBMED = "http://www.ncbi.nlm.nih.gov/pubmed/"

#: biorag's name of each BioASQ measure the jar prints with ``-verbose`` (block, key)
BIOASQ_PHASE_B = {
    "YesNo Acc": ("yesno", "accuracy"),
    "YesNo macroF1": ("yesno", "macro_f1"),
    "YesNo F1 yes": ("yesno", "f1_yes"),
    "YesNo F1 no": ("yesno", "f1_no"),
    "Factoid Strict Acc": ("factoid", "strict_accuracy"),
    "Factoid Lenient Acc": ("factoid", "lenient_accuracy"),
    "Factoid MRR": ("factoid", "mrr"),
    "List Prec": ("list", "precision"),
    "List Rec": ("list", "recall"),
    "List F1": ("list", "f1"),
}
BIOASQ_PHASE_A = {
    "MPrec documents": ("documents", "precision"),
    "MRec documents": ("documents", "recall"),
    "MF1 documents": ("documents", "f1"),
    "MAP documents": ("documents", "map"),
    "GMAP documents": ("documents", "gmap"),
    "MPrec snippets": ("snippets", "mean_precision"),
    "MRec snippets": ("snippets", "mean_recall"),
    "MF1 snippets": ("snippets", "mean_f1"),
    "MAP snippets": ("snippets", "map"),
    "GMAP snippets": ("snippets", "gmap"),
}


def unavailable(reason: str) -> NoReturn:
    """Skip the test saying why, or fail it where the evaluators must run: CI (``.ci/run``) sets
    ``BIORAG_REQUIRE_OFFICIAL=1`` and always has ``../shared``, so a missing evaluator or Java
    there is an error, not a silent skip. A clone without ``../shared`` still skips."""
    if os.environ.get("BIORAG_REQUIRE_OFFICIAL") == "1" and SHARED.is_dir():
        pytest.fail(f"{reason} (BIORAG_REQUIRE_OFFICIAL=1 and ../shared is present)")
    pytest.skip(reason)


def official_dir() -> Path:
    """``../shared/official``, or skip (or fail: :func:`unavailable`) saying it is absent."""
    if not OFFICIAL.is_dir():
        unavailable("../shared/official is not beside this checkout")
    return OFFICIAL


def bioasq_jar(phase: str, golden: Path, system: Path, edition: int = 9) -> dict[str, str]:
    """The BioASQ evaluator's ``-verbose`` measures, ``{name: the text it printed}``; skips
    (or fails: :func:`unavailable`) without Java."""
    if shutil.which("java") is None:
        unavailable(
            "no Java runtime to run the BioASQ evaluator (bash scripts/install-java.sh, or "
            "apt-get install default-jre-headless)"
        )
    jar = official_dir() / "bioasq"
    out = subprocess.run(
        ["java", "-cp", f"{jar / 'BioASQEvaluation.jar'}:{jar / 'lib'}/*",
         "evaluation.EvaluatorTask1b", phase, "-e", str(edition), str(golden), str(system),
         "-verbose"],
        capture_output=True, text=True, check=True, timeout=120,
    ).stdout  # fmt: skip
    printed = dict(re.findall(r"^([A-Za-z][^:\n]*): (\S+)$", out, re.M))
    assert printed, f"the BioASQ evaluator printed no measures:\n{out}"
    return printed


def differences(printed: dict[str, str], scores: dict, names: dict[str, tuple]) -> dict:
    """``{measure: (what the jar printed, biorag's)}`` for each measure that differs. The jar
    prints Java's ``Double.toString``: every digit that tells one double from the next, so the
    printed precision is the whole double and equal means the same double."""
    out = {}
    for name, (block, key) in names.items():
        ours = float(scores[block][key])
        if float(printed[name]) != ours:
            out[name] = (printed[name], ours)
    return out


def pubmedqa_script(predictions: Path, ground_truth: Path, workdir: Path) -> dict[str, str]:
    """What PubMedQA's ``evaluation.py`` prints for ``predictions`` (``{pmid: label}``), run as
    published: from ``workdir``, holding ``data/test_ground_truth.json``."""
    (workdir / "data").mkdir(exist_ok=True)
    shutil.copy(ground_truth, workdir / "data" / "test_ground_truth.json")
    script = official_dir() / "pubmedqa" / "evaluation.py"
    out = subprocess.run(
        [sys.executable, "-B", str(script), str(predictions.resolve())],
        cwd=workdir, capture_output=True, text=True, check=True, timeout=120,
    ).stdout  # fmt: skip
    printed = dict(re.findall(r"^(Accuracy|Macro-F1) (\S+)$", out, re.M))
    assert len(printed) == 2, out
    return printed
