"""Fixtures of the command-line tests: the ``biorag`` app run in-process in a temp home, and the
fake OpenAI-compatible server of the LLM tests."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from click.testing import Result
from tests.llm.conftest import fake_openai  # noqa: F401  (the fixture, for the LLM error tests)
from typer.testing import CliRunner

from biorag.cli.main import app


@pytest.fixture
def cli(tmp_path, monkeypatch) -> Callable[..., Result]:
    """``cli(*args, **env)``: ``biorag ARGS`` with ``BIORAG_*`` settings from ``env``
    (``llm_backend="mock"`` sets ``BIORAG_LLM_BACKEND``); a traceback fails the test."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("BIORAG_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("BIORAG_PROGRESS", "0")
    runner = CliRunner()

    def invoke(*args: str, **env: Any) -> Result:
        environ = {f"BIORAG_{k.upper()}": str(v) for k, v in env.items()}
        return runner.invoke(app, list(args), env=environ, catch_exceptions=False)

    return invoke
