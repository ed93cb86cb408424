"""Stage yields: counts, shares, the loud low-yield warning, and the CLAIMS extraction's yield."""

from __future__ import annotations

import logging

import pytest

from biorag.corpus.models import Chunk
from biorag.extract import build_extraction
from biorag.llm import LLM, MockBackend
from biorag.llm.dry_run import dry_run_responder
from biorag.llm.stage_yield import (
    StageYield,
    describe_yields,
    reset_warnings,
    warn_if_low,
)

TEXT = (
    "Metformin lowered HbA1c by 1.1% in adults with type 2 diabetes. "
    "Aspirin reduced the risk of stroke in adults over 50."
)


@pytest.fixture(autouse=True)
def _fresh_warnings():
    reset_warnings()
    yield
    reset_warnings()


def low_records(caplog) -> list[logging.LogRecord]:
    return [r for r in caplog.records if "LOW YIELD" in r.getMessage()]


def test_shares_and_dict_round_trip() -> None:
    y = StageYield("s", inputs=20, usable=3, outputs=4, fallbacks=17, unit="papers")
    d = y.to_dict()
    assert d["usable_share"] == 0.15 and d["fallback_share"] == 0.85 and d["low"] is True
    assert d["outputs_per_input"] == 0.2
    assert StageYield.from_dict(d) == y
    assert describe_yields({"s": d}) == [
        "s: 3 of 20 papers usable (15%), 4 outputs (0.20 per input), "
        "17 fell back to the no-LLM floor (85%)"
    ]
    assert not StageYield("empty").is_low() and StageYield("empty").usable_share == 0.0
    assert not StageYield("ok", inputs=10, usable=2).is_low()  # 20% is not below 20%


def test_warning_names_stage_numbers_and_remedy(caplog) -> None:
    with caplog.at_level(logging.WARNING, logger="biorag"):
        assert warn_if_low(StageYield("claims", inputs=46, usable=1, unit="chunks"))
        assert not warn_if_low(StageYield("claims", inputs=10, usable=9))
    [rec] = low_records(caplog)
    msg = rec.getMessage()
    assert rec.levelno == logging.WARNING
    assert "claims" in msg and "1 of 46 chunks" in msg and "bigger model" in msg


def test_once_warns_once_per_stage(caplog) -> None:
    low = StageYield("triples", inputs=5, usable=0)
    with caplog.at_level(logging.WARNING, logger="biorag"):
        assert warn_if_low(low, once=True) and warn_if_low(low, once=True)
        assert warn_if_low(StageYield("claims", inputs=5, usable=0), once=True)
    assert [r.getMessage().split(":")[0] for r in low_records(caplog)] == [
        "LOW YIELD of LLM stage triples",
        "LOW YIELD of LLM stage claims",
    ]


def chunks() -> list[Chunk]:
    texts = [TEXT.replace("Metformin", f"Drug{i}") for i in range(4)]
    return [
        Chunk(id=Chunk.make_id("d", i * 1000, i * 1000 + len(t)), doc_id="d", index=i,
              start=i * 1000, end=i * 1000 + len(t), text=t)
        for i, t in enumerate(texts)
    ]  # fmt: skip


@pytest.mark.parametrize("mode", ["faithful", "batched"])
async def test_extraction_from_a_model_that_answers_garbage(mode, caplog) -> None:
    llm = LLM(
        MockBackend(rules=[{"response": "I cannot help with that."}]),
        max_retries=0,
        retry_base_delay=0.0,
    )
    extraction = build_extraction(llm, mode)
    with caplog.at_level(logging.WARNING, logger="biorag"):
        assert await extraction.run(chunks()) == []
    stage = "claims" if mode == "faithful" else "claims_triples"
    y = extraction.stats["llm_yield"][stage]
    assert (y["inputs"], y["usable"], y["outputs"], y["low"]) == (4, 0, 0, True)
    [rec] = low_records(caplog)
    assert stage in rec.getMessage() and "0 of 4 chunks" in rec.getMessage()


async def test_extraction_with_a_model_that_follows_the_format(caplog) -> None:
    llm = LLM(MockBackend(responder=dry_run_responder), max_retries=0, retry_base_delay=0.0)
    extraction = build_extraction(llm, "faithful")
    with caplog.at_level(logging.WARNING, logger="biorag"):
        claims = await extraction.run(chunks())
    assert claims and not low_records(caplog)
    y = extraction.stats["llm_yield"]
    assert y["claims"]["inputs"] == y["claims"]["usable"] == 4
    assert y["triples"]["inputs"] == len(claims) == y["triples"]["usable"]
    assert y["triples"]["fallbacks"] == 0


async def test_rule_triples_are_the_triples_floor() -> None:
    llm = LLM(
        MockBackend(responder=lambda r: "CLAIM: " + TEXT if r.stage == "claims" else "?"),
        max_retries=0,
        retry_base_delay=0.0,
    )
    extraction = build_extraction(llm, "faithful", gleaning=False)
    [claim] = await extraction.run(chunks()[:1])
    assert claim.triple_source == "rule_based"
    t = extraction.stats["llm_yield"]["triples"]
    assert (t["inputs"], t["usable"], t["fallbacks"], t["fallback_share"]) == (1, 0, 1, 1.0)


def test_floor_extraction_has_no_llm_yield() -> None:
    import asyncio

    extraction = build_extraction(None)
    asyncio.run(extraction.run(chunks()[:1]))
    assert "llm_yield" not in extraction.stats
