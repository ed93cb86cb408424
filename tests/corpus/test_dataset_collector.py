"""Collector.finish_subset: a blank subset may be chosen unless ``blank=False``."""

from __future__ import annotations

import pytest

from biorag.corpus.datasets.base import QAItem
from biorag.corpus.datasets.common import Collector
from biorag.errors import ConfigError


def _collector() -> Collector:
    col = Collector("demo")
    for qid, subset in (("a", "step1"), ("b", "")):
        col.add(QAItem(id=qid, dataset="demo", text="Q?", subset=subset), "f.jsonl", 1, "line 1")
    return col


def test_a_blank_subset_is_a_choice_unless_refused() -> None:
    kept = _collector().finish_subset(limit=None, split="", setting=None)
    assert [it.id for it in kept.items] == ["b"]
    with pytest.raises(ConfigError, match=r"demo: unknown split ''; use one of: step1 \(or none\)"):
        _collector().finish_subset(limit=None, split="", setting=None, blank=False)
    named = _collector().finish_subset(limit=None, split="step1", setting=None, blank=False)
    assert [it.id for it in named.items] == ["a"] and named.info["selected"] == 1
