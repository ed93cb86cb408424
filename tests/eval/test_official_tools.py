"""The official-evaluator tests skip where ``../shared`` or Java is missing, but fail where
``BIORAG_REQUIRE_OFFICIAL=1`` (CI) and ``../shared`` is there: a CI run cannot pass having
compared nothing with the evaluators."""

from __future__ import annotations

import pytest
from tests.eval import official_tools


@pytest.mark.parametrize(
    ("require", "shared", "outcome"),
    [
        (None, True, pytest.skip.Exception),
        ("1", False, pytest.skip.Exception),  # a clone without ../shared still passes
        ("1", True, pytest.fail.Exception),
    ],
)
def test_unavailable_skips_unless_required(tmp_path, monkeypatch, require, shared, outcome):
    root = tmp_path / "shared"
    if shared:
        root.mkdir()
    monkeypatch.setattr(official_tools, "SHARED", root)
    monkeypatch.setattr(official_tools, "OFFICIAL", root / "official")
    if require is None:
        monkeypatch.delenv("BIORAG_REQUIRE_OFFICIAL", raising=False)
    else:
        monkeypatch.setenv("BIORAG_REQUIRE_OFFICIAL", require)
    with pytest.raises(outcome, match="shared/official is not beside"):
        official_tools.official_dir()


def test_missing_java_fails_when_required(tmp_path, monkeypatch):
    (tmp_path / "shared").mkdir()
    monkeypatch.setattr(official_tools, "SHARED", tmp_path / "shared")
    monkeypatch.setattr(official_tools.shutil, "which", lambda _name: None)
    monkeypatch.setenv("BIORAG_REQUIRE_OFFICIAL", "1")
    with pytest.raises(pytest.fail.Exception, match="no Java runtime"):
        official_tools.bioasq_jar("-phaseB", tmp_path / "g.json", tmp_path / "s.json")
