"""The LLM verifier: the model gives a verdict and the deciding span for each (sentence, cited
passage) pair, batched (up to ``PAIRS_PER_CALL`` pairs a call, stage ``verify``), as
``{"verdicts": [{"label", "span"}]}``, one entry per pair in the order the prompt lists them.

A pair the model leaves out or labels with something else gets the rules verifier's verdict
(counted in ``fallbacks``); a span the model did not copy from the passage is replaced by the
rules verifier's best span for that pair, so every span shown is really in its passage.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from biorag.llm import PromptTemplate, budget
from biorag.llm.base import ChatModel
from biorag.llm.evidence import format_passages
from biorag.verify import dry_replies as _dry_replies  # noqa: F401 - registers its dry-run answer
from biorag.verify.align import locate
from biorag.verify.models import LABELS, PassageVerdict, Span

PROMPTS = "biorag.verify.prompts"
PAIRS_PER_CALL = 12
PER_PAIR_TOKENS = 64  # {"sentence": 2, "passage": "P3", "label": "...", "span": "a few words"}


def schema(n_pairs: int) -> dict[str, Any]:
    """``{"verdicts": [{"label", "span"}]}`` with exactly one entry per pair (read by position:
    a small model cannot be trusted to name the pair it judges)."""
    item = {"type": "object",
            "properties": {"label": {"type": "string", "enum": list(LABELS)},
                           "span": {"type": "string"}},
            "required": ["label", "span"]}  # fmt: skip
    verdicts = {"type": "array", "items": item, "minItems": n_pairs, "maxItems": n_pairs}
    return {"type": "object", "properties": {"verdicts": verdicts}, "required": ["verdicts"]}


_ALIASES = {"partially_supported": "partly_supported", "partial": "partly_supported",
            "unsupported": "not_supported", "contradicts": "contradicted",
            "contradiction": "contradicted", "support": "supported"}  # fmt: skip


@dataclass
class Pair:
    """One sentence (1-based number in the answer) against one passage it cites."""

    sentence_no: int
    sentence: str
    passage_id: str
    passage: str


def requests(pairs: Sequence[Pair]) -> list[tuple[list[Pair], Any]]:
    """The chat requests checking ``pairs``, each with the pairs it asks about."""
    tpl = PromptTemplate.load(PROMPTS, "verify")
    out = []
    for i in range(0, len(pairs), PAIRS_PER_CALL):
        batch = list(pairs[i : i + PAIRS_PER_CALL])
        ids = dict.fromkeys(p.passage_id for p in batch)
        short = {pid: f"P{n}" for n, pid in enumerate(ids, 1)}
        text_of = {p.passage_id: p.passage for p in batch}
        sentences = dict.fromkeys((p.sentence_no, p.sentence) for p in batch)
        values = {
            "passages": format_passages((short[pid], text_of[pid]) for pid in short),
            "sentences": "\n".join(f"{n}. {s}" for n, s in sentences),
            "pairs": "\n".join(
                f"{k}. sentence {p.sentence_no} against {short[p.passage_id]}"
                for k, p in enumerate(batch, 1)
            ),
        }
        req = tpl.request(
            values, stage="verify", json_schema=schema(len(batch)),
            max_tokens=budget.fixed_list(len(batch), PER_PAIR_TOKENS),
        )  # fmt: skip
        out.append((batch, req))
    return out


def estimate_tokens(pairs: Sequence[Pair]) -> int:
    """About how many tokens checking ``pairs`` costs (prompts plus the answers' budget)."""
    total = 0
    for batch, req in requests(pairs):
        text = "".join(m["content"] for m in req.messages)
        total += budget.estimate_tokens(text) + len(batch) * PER_PAIR_TOKENS
    return total


def _label(value: Any) -> str | None:
    if not isinstance(value, str):
        return None
    key = value.strip().lower().replace(" ", "_").replace("-", "_")
    key = _ALIASES.get(key, key)
    return key if key in LABELS else None


def read_verdicts(parsed: Any, batch: Sequence[Pair]) -> dict[tuple[int, str], PassageVerdict]:
    """The model's verdicts on ``batch`` by position, keyed by (sentence number, passage id);
    an entry with no known label, and the pairs past the model's last entry, are left out."""
    items = parsed.get("verdicts") if isinstance(parsed, dict) else parsed
    out: dict[tuple[int, str], PassageVerdict] = {}
    for pair, item in zip(batch, items if isinstance(items, list) else [], strict=False):
        label = _label(item.get("label")) if isinstance(item, dict) else None
        key = (pair.sentence_no, pair.passage_id)
        if label is None or key in out:
            continue
        span_text = item.get("span") if isinstance(item.get("span"), str) else ""
        where = locate(span_text, pair.passage) if span_text else None
        span = None
        if where is not None:
            span = Span(text=pair.passage[where[0] : where[1]], start=where[0], end=where[1])
        out[key] = PassageVerdict(
            passage_id=pair.passage_id,
            label=label,  # type: ignore[arg-type]
            score=1.0 if label == "supported" else 0.0,
            span=span,
        )
    return out


async def verify_with_llm(
    llm: ChatModel, pairs: Sequence[Pair]
) -> tuple[dict[tuple[int, str], PassageVerdict], int]:
    """The model's verdicts on ``pairs`` (keyed by sentence number and passage id) and how many
    of its answers could not be read at all."""
    planned = requests(pairs)
    responses = await asyncio.gather(*(llm.chat_json(req) for _, req in planned))
    out: dict[tuple[int, str], PassageVerdict] = {}
    unreadable = 0
    for (batch, _), resp in zip(planned, responses, strict=True):
        got = read_verdicts(resp.parsed, batch)
        unreadable += not got
        out.update(got)
    return out, unreadable
