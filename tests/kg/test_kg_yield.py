"""``biorag kg build`` reports the yield of its LLM stage and warns loudly when it is low."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest
import typer
from tests.conftest import HashEmbedder
from typer.testing import CliRunner

from biorag.cli import kg_cmd
from biorag.cli.common import STATE
from biorag.llm import LLM, MockBackend

QA = [
    {"id": f"q{i}", "question": f"Which drug treats disease {i}?", "answer": f"Drug {i}"}
    for i in range(5)
]


@pytest.fixture
def build(tmp_path, monkeypatch, cli_components):
    monkeypatch.setenv("BIORAG_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("BIORAG_PROGRESS", "0")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(STATE, "config", None)
    monkeypatch.setattr(STATE, "_settings", None)
    emb = HashEmbedder()
    cli_components(embedder=emb)
    src = tmp_path / "qa.jsonl"
    src.write_text("".join(json.dumps(r) + "\n" for r in QA), encoding="utf-8")
    app = typer.Typer()
    app.add_typer(kg_cmd.app, name="kg")

    @app.callback()
    def main() -> None:
        pass

    def invoke(answer: str, out: str, *extra: str):
        client = LLM(MockBackend(rules=[{"response": answer}]), max_retries=0, retry_base_delay=0)
        cli_components(llm=client)
        args = ["kg", "build", "--from", str(src), "--format", "jsonl", "--out", out, *extra]
        return CliRunner().invoke(app, args, catch_exceptions=False)

    return invoke


def test_garbage_answers_give_a_low_yield_warning_and_json(build, caplog) -> None:
    with caplog.at_level(logging.WARNING, logger="biorag"):
        res = build("I am not sure what you mean.", "kg", "--json")
    assert res.exit_code == 0, res.stderr
    y = json.loads(res.stdout)["llm_yield"]["kg_triplets"]
    assert (y["inputs"], y["usable"], y["outputs"], y["low"]) == (5, 0, 0, True)
    [warning] = [r for r in caplog.records if "LOW YIELD" in r.getMessage()]
    assert warning.levelno == logging.WARNING and "kg_triplets" in warning.getMessage()
    assert "0 of 5 QA pairs" in warning.getMessage()
    built = json.loads(Path(json.loads(res.stdout)["files"]["build"]).read_text())
    assert built["llm_yield"]["kg_triplets"]["usable"] == 0


def test_a_good_model_reports_its_yield_quietly(build, caplog) -> None:
    answer = "SUBJECT: Drug X\nPREDICATE: treats\nOBJECT: disease X"
    with caplog.at_level(logging.WARNING, logger="biorag"):
        res = build(answer, "kg")
    assert res.exit_code == 0, res.stderr
    assert "LLM yield, kg_triplets: 5 of 5 QA pairs usable (100%)" in res.stderr
    assert not [r for r in caplog.records if "LOW YIELD" in r.getMessage()]
