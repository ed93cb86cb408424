"""A BioStrataKG build stopped midway (a fault injected after one batch of papers) resumes with
the papers it had not extracted and stores what one uninterrupted build stores."""

from __future__ import annotations

import json

import pytest
from tests.conftest import HashEmbedder
from tests.demo_data import DEMO

import biorag.strata.build as strata_build
import biorag.strata.normalize_mentions as normalize_stage
from biorag.strata import build_strata
from biorag.strata.extract_papers import CHECKPOINT, PAPERS_PER_BATCH
from biorag.strata.normalize_mentions import CHECKPOINT as NORMALIZE_CHECKPOINT
from biorag.strata.normalize_mentions import MENTIONS_PER_BATCH
from biorag.strata.vocab import Vocabulary

N = 2 * PAPERS_PER_BATCH + 5


def demo_papers(n: int = N) -> list[dict]:
    rows = [json.loads(x) for x in (DEMO / "pubmedqa_sample.jsonl").read_text().splitlines()]
    return [
        {"pid": r["id"], "title": r.get("title") or "", "abstract": r["text"]} for r in rows[:n]
    ]


class Stop(Exception):
    pass


def stopping_after_one_batch(make_run):
    """``make_run`` (a ``local_batches``) whose runs raise :class:`Stop` after one batch."""

    def make(*args):
        run = make_run(*args)

        def gen(todo):
            for i, results in enumerate(run(todo)):
                if i == 1:
                    raise Stop
                yield results

        return gen

    return make


def comparable(report) -> dict:
    return {
        k: v
        for k, v in vars(report).items()
        if k not in ("db_path", "papers_resumed", "mentions_resumed", "vectorgraphrag")
    }


def test_a_stopped_strata_build_resumes_with_the_papers_left(tmp_path, monkeypatch):
    papers, emb = demo_papers(), HashEmbedder()
    whole = build_strata(papers, None, emb, Vocabulary(), tmp_path / "whole")
    assert whole.papers == N and not (tmp_path / "whole" / CHECKPOINT).exists()
    assert sum(whole.edges.values()) > N  # mentions, methods, domains: a graph to compare

    stopping = stopping_after_one_batch(strata_build.local_batches)
    monkeypatch.setattr(strata_build, "local_batches", stopping)
    with pytest.raises(Stop):
        build_strata(papers, None, emb, Vocabulary(), tmp_path / "kg")
    assert len((tmp_path / "kg" / CHECKPOINT).read_text().splitlines()) == 1 + PAPERS_PER_BATCH
    monkeypatch.undo()
    again = build_strata(papers, None, emb, Vocabulary(), tmp_path / "kg")
    assert again.papers_resumed == PAPERS_PER_BATCH
    assert comparable(again) == comparable(whole)
    assert not (tmp_path / "kg" / CHECKPOINT).exists()


def test_a_build_stopped_while_normalizing_resumes_with_the_mentions_left(tmp_path, monkeypatch):
    papers, emb = demo_papers(), HashEmbedder()
    whole = build_strata(papers, None, emb, Vocabulary(), tmp_path / "whole")
    assert whole.mentions_resumed == 0 and not (tmp_path / "whole" / NORMALIZE_CHECKPOINT).exists()
    stopping = stopping_after_one_batch(normalize_stage.local_batches)
    monkeypatch.setattr(normalize_stage, "local_batches", stopping)
    with pytest.raises(Stop):
        build_strata(papers, None, emb, Vocabulary(), tmp_path / "kg")
    lines = (tmp_path / "kg" / NORMALIZE_CHECKPOINT).read_text().splitlines()
    assert len(lines) == 1 + MENTIONS_PER_BATCH
    assert (tmp_path / "kg" / CHECKPOINT).exists()  # extraction's, kept until all is stored
    monkeypatch.undo()
    asked: list[str] = []
    real_batch = normalize_stage.normalize_batch

    def counting(normalizer, units):
        asked.extend(u["sid"] for u in units)
        return real_batch(normalizer, units)

    monkeypatch.setattr(normalize_stage, "normalize_batch", counting)
    again = build_strata(papers, None, emb, Vocabulary(), tmp_path / "kg")
    assert again.mentions_resumed == MENTIONS_PER_BATCH
    first = {json.loads(line)["sid"] for line in lines[1:]}
    assert len(asked) == len(set(asked)) > 0 and not first & set(asked)  # the rest, once each
    assert comparable(again) == comparable(whole)
    assert not (tmp_path / "kg" / NORMALIZE_CHECKPOINT).exists()
