"""Prompt templates loaded from package files."""

from __future__ import annotations

import json
import uuid
from pathlib import Path

import pytest

from biorag.llm import PromptTemplate


@pytest.fixture
def prompt_pkg(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[str, Path]:
    """A throwaway package (unique name per test) holding prompt files."""
    name = f"fake_operator_pkg_{uuid.uuid4().hex[:8]}"
    pkg = tmp_path / name
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "judge.system.txt").write_text("You are a $role. Answer in JSON.")
    (pkg / "judge.user.txt").write_text(
        'Question: $question\nContext: ${context}\nAnswer like {"answer": "yes"}; costs $$5.'
    )
    (pkg / "plain.txt").write_text("Summarize: $text")
    monkeypatch.syspath_prepend(str(tmp_path))
    return name, pkg


def test_load_render_and_messages(prompt_pkg: tuple[str, Path]) -> None:
    name, _ = prompt_pkg
    t = PromptTemplate.load(name, "judge")
    msgs = t.messages(
        system_vars={"role": "judge"}, question="Does aspirin help?", context="{json-ish}"
    )
    assert msgs[0] == {"role": "system", "content": "You are a judge. Answer in JSON."}
    assert msgs[1]["role"] == "user"
    assert msgs[1]["content"] == (
        "Question: Does aspirin help?\nContext: {json-ish}\n"
        'Answer like {"answer": "yes"}; costs $5.'
    )
    plain = PromptTemplate.load(name, "plain")
    assert plain.system is None
    assert plain.messages(text="x") == [{"role": "user", "content": "Summarize: x"}]


def test_version_tracks_the_text(prompt_pkg: tuple[str, Path]) -> None:
    name, path = prompt_pkg
    t = PromptTemplate.load(name, "judge")
    assert len(t.version) == 12
    assert t.version == PromptTemplate.load(name, "judge").version
    (path / "judge.user.txt").write_text("Question: $question (edited)")
    assert PromptTemplate.load(name, "judge").version != t.version
    req = t.request(
        {"question": "q", "context": "c"},
        stage="judge",
        system_vars={"role": "r"},
        json_schema={"type": "object"},
    )
    assert req.template_version == t.version and req.stage == "judge"
    assert json.dumps(req.json_schema) == '{"type": "object"}'


def test_missing_variable_and_missing_file(prompt_pkg: tuple[str, Path]) -> None:
    name, _ = prompt_pkg
    t = PromptTemplate.load(name, "plain")
    with pytest.raises(ValueError, match=r"\$text"):
        t.render()
    with pytest.raises(FileNotFoundError):
        PromptTemplate.load(name, "nope")
