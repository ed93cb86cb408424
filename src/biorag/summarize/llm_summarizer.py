"""The LLM summarizer: test summaries, layer summaries (faithful or batched) and compression.

Modes of :meth:`LLMSummarizer.summarize_layer`:

* ``faithful``: one call per claim (stage ``layer_summary``), all claims of the layer at once;
* ``batched`` (default): the whole layer in one call (stage ``layer_summary_batch``) answering
  ``{"summaries": {"<claim id>": "<summary>"}}`` (:func:`batch_schema`), matched back by id. A layer
  larger than ``max_batch_items`` claims or ``max_batch_tokens`` input tokens is split into
  several batch calls sent together (same round). Claims missing from the answer, or with an
  empty or malformed entry, get a per-claim ``layer_summary`` call in a second round: no claim
  is ever dropped; so do all claims of a batch call that fails (``LLMError`` after the client's
  retries). A batch of one claim is sent as a per-claim call.

Compression clusters on ``embedder`` vectors when one is given, else on TF-IDF vectors.
"""

from __future__ import annotations

import asyncio
import re
from collections import Counter
from typing import Any, Literal

import numpy as np

from biorag.corpus.tokens import TokenCounter, default_counter
from biorag.embed.base import Embedder
from biorag.errors import LLMError, LLMUnavailableError
from biorag.llm.accounting import note_fallback
from biorag.llm.base import ChatModel
from biorag.llm.budget import SUMMARY_ENTRY, TEST_SUMMARY, fixed_list, words_budget
from biorag.llm.evidence import format_passage, format_passages
from biorag.llm.prompts import PromptTemplate
from biorag.summarize import dry_replies as _dry_replies  # noqa: F401 - registers its dry-run answers
from biorag.summarize.base import (
    STAGE_COMPRESS,
    STAGE_LAYER,
    STAGE_LAYER_BATCH,
    STAGE_TEST,
    LayerItem,
    LayerOutcome,
    Summarizer,
    format_options,
    take_within_budget,
)

PROMPTS = "biorag.summarize.prompts"
#: characters a summary may have per token of its budget (a bound, not a target: English text
#: runs about 4 characters a token)
CHARS_PER_SUMMARY_TOKEN = 4


def batch_schema(ids: list[str], summary_tokens: int) -> dict[str, Any]:
    """The JSON schema of a batched answer about the claims ``ids``:
    ``{"summaries": {"<claim id>": "<summary>", ...}}`` with every id a required key, no other
    key, and each summary at most ``summary_tokens`` tokens' worth of characters. A server that
    constrains decoding to the schema (llama.cpp, vLLM, Ollama) then writes each id exactly
    once, in order, and cannot let one summary loop until ``max_tokens``: the ways a small model
    lost a batch (invented or repeated ids: 25 of 29 test summaries were asked again one by
    one). :func:`parse_batch` also reads the list form ``[{"claim_id", "summary"}]``."""
    keys = list(dict.fromkeys(ids))
    entry = {"type": "string", "maxLength": summary_tokens * CHARS_PER_SUMMARY_TOKEN}
    return {
        "type": "object",
        "properties": {
            "summaries": {
                "type": "object",
                "properties": {k: dict(entry) for k in keys},
                "required": keys,
                "additionalProperties": False,
            }
        },
        "required": ["summaries"],
        "additionalProperties": False,
    }


_LABEL = re.compile(r"^\s*(?:\*\*)?(?:summary|merged summary)\s*:\s*(?:\*\*)?\s*", re.I)


def clean_summary(text: str) -> str:
    """A model's summary without surrounding space or a leading ``Summary:`` label."""
    return _LABEL.sub("", text or "").strip()


def bullet_list(texts: list[str], prefix: str = "") -> str:
    """``texts`` as passage blocks with ids ``prefix`` + 1, 2, ... ('(none)' when empty)."""
    if not texts:
        return "(none)"
    return format_passages((f"{prefix}{i}", t) for i, t in enumerate(texts, 1))


def parse_batch(parsed: Any, expected: set[str]) -> dict[str, str]:
    """Usable ``claim_id -> summary`` entries of a batched answer (first one per id wins);
    unknown ids, empty summaries and malformed entries are ignored."""
    entries = parsed.get("summaries") if isinstance(parsed, dict) else None
    if isinstance(entries, dict):  # {"summaries": {"<id>": "<summary>"}}
        entries = [{"claim_id": k, "summary": v} for k, v in entries.items()]
    out: dict[str, str] = {}
    for entry in entries if isinstance(entries, list) else []:
        if not isinstance(entry, dict):
            continue
        cid, summary = entry.get("claim_id"), entry.get("summary")
        if not isinstance(cid, str) or not isinstance(summary, str):
            continue
        cid, summary = cid.strip(), clean_summary(summary)
        if cid in expected and summary and cid not in out:
            out[cid] = summary
    return out


def tfidf_vectors(texts: list[str]) -> np.ndarray:
    """L2-normalized TF-IDF rows (zeros when the texts have no words)."""
    from sklearn.feature_extraction.text import TfidfVectorizer

    try:
        matrix = TfidfVectorizer(sublinear_tf=True).fit_transform(texts)
    except ValueError:  # empty vocabulary
        return np.zeros((len(texts), 1), dtype=np.float32)
    return np.asarray(matrix.toarray(), dtype=np.float32)


class LLMSummarizer(Summarizer):
    """Summaries written by ``llm`` (a :class:`biorag.llm.LLM`, or anything with an async
    ``chat(ChatRequest) -> ChatResponse``)."""

    name = "llm"

    def __init__(
        self,
        llm: ChatModel,
        mode: Literal["batched", "faithful"] = "batched",
        token_limit: int = 2000,
        *,
        embedder: Embedder | None = None,
        max_batch_items: int = 12,
        max_batch_tokens: int = 8000,
        summary_max_tokens: int = 400,
        counter: TokenCounter | None = None,
        layer_question: bool = False,
        test_options: bool = False,
    ) -> None:
        if mode not in ("batched", "faithful"):
            raise ValueError(f"LLMSummarizer mode must be 'batched' or 'faithful', got {mode!r}")
        self.llm = llm
        self.mode = mode
        self.token_limit = token_limit
        self.embedder = embedder
        self.max_batch_items = max(1, max_batch_items)
        self.max_batch_tokens = max_batch_tokens
        self.summary_max_tokens = summary_max_tokens
        self.counter = counter or default_counter()
        self.layer_question = layer_question
        self.test_options = test_options
        self.templates = {
            name: PromptTemplate.load(PROMPTS, name)
            for name in ("coi_test_summary", "layer_summary", "layer_summary_batch", "compress")
        }

    def __repr__(self) -> str:
        return f"LLMSummarizer(mode={self.mode!r}, token_limit={self.token_limit})"

    def _question_values(self, question: str) -> dict[str, str]:
        """The layer prompts' question slots: empty as in the paper (its layer summary prompt
        has no question), or the question when ``layer_question`` is on."""
        if not self.layer_question:
            return {"question_block": "", "and_question": ""}
        block = (
            "Question the summaries will later help to answer (use it only to judge what is "
            f"relevant; do not answer it):\n{question}\n\n"
        )
        return {"question_block": block, "and_question": " and to the question"}

    def _option_values(self, options: dict[str, str] | None) -> dict[str, str]:
        """The test-summary prompts' option slots: empty as in the paper (its claim-of-interest
        prompt has no options), or the options when ``test_options`` is on."""
        if not self.test_options:
            return {"options_block": "", "no_choice": ""}
        return {
            "options_block": f"Answer options:\n{format_options(options)}\n\n",
            "no_choice": " and do not choose an answer option",
        }

    def _max_tokens(self, template: str, values: dict[str, Any]) -> int:
        """The answer's budget (:mod:`biorag.llm.budget`): a test summary is one short
        paragraph, a layer summary ``summary_max_tokens``, a merge its word target."""
        if template == "compress":
            return words_budget(int(values["words"]))
        if template == "layer_summary":
            return self.summary_max_tokens
        return TEST_SUMMARY

    async def _ask(self, template: str, stage: str, **values: Any) -> str:
        tpl = self.templates[template]
        max_tokens = self._max_tokens(template, values)
        resp = await self.llm.chat(tpl.request(values, stage=stage, max_tokens=max_tokens))
        return clean_summary(resp.text)

    async def test_summary(
        self, question: str, options: dict[str, str] | None, claim: str, related: list[str]
    ) -> str:
        """How ``claim`` bears on the question given its related claims (one call; related
        claims beyond ``token_limit`` tokens are left out, in the order given)."""
        related = take_within_budget(related, self.token_limit, self.counter)
        text = await self._ask(
            "coi_test_summary",
            STAGE_TEST,
            question=question,
            claim=format_passage("claim", claim),
            related=bullet_list(related),
            **self._option_values(options),
        )
        return text or claim

    async def test_summaries(
        self,
        question: str,
        options: dict[str, str] | None,
        items: list[tuple[str, str, list[str]]],
    ) -> list[str]:
        """Batched mode: every test summary in one call (JSON keyed by claim id); an item the
        answer lacks or garbles gets its own call. Faithful mode: one call per item."""
        if self.mode == "faithful" or len(items) < 2:
            return await super().test_summaries(question, options, items)
        budget = max(self.token_limit // len(items), 64)
        blocks = [
            f"### Claim id: {cid}\nCentral claim:\n{format_passage(cid, claim)}\nRelated claims:\n"
            + bullet_list(take_within_budget(rel, budget, self.counter), f"{cid}.")
            for cid, claim, rel in items
        ]
        tpl = PromptTemplate.load(PROMPTS, "coi_test_summary_batch")
        values = {
            "question": question,
            "n": len(items),
            "items": "\n\n".join(blocks),
            **self._option_values(options),
        }
        got: dict[str, str] = {}
        try:
            resp = await self.llm.chat(
                tpl.request(
                    values,
                    stage=STAGE_TEST,
                    json_schema=batch_schema([cid for cid, _, _ in items], TEST_SUMMARY),
                    max_tokens=fixed_list(len(items), TEST_SUMMARY + SUMMARY_ENTRY),
                )
            )
            got = parse_batch(resp.parsed, {cid for cid, _, _ in items})
        except LLMUnavailableError:
            raise  # no model at all: stop, do not run on without it
        except LLMError:
            got = {}
        missing = [it for it in items if it[0] not in got]
        if missing:
            note_fallback(self.llm, STAGE_TEST, len(missing))  # asked one by one instead
            redo = await super().test_summaries(question, options, missing)
            got.update({it[0]: text for it, text in zip(missing, redo, strict=True)})
        return [got[cid] for cid, _, _ in items]

    async def _one(self, question: str, item: LayerItem) -> str:
        text = await self._ask(
            "layer_summary",
            STAGE_LAYER,
            claim=format_passage(item.claim_id, item.text),
            context=bullet_list(item.context),
            **self._question_values(question),
        )
        return text or item.text

    def _batches(self, items: list[LayerItem]) -> list[list[LayerItem]]:
        sizes = self.counter.count_many([" ".join([it.text, *it.context]) for it in items])
        batches: list[list[LayerItem]] = []
        used = 0
        for item, size in zip(items, sizes, strict=True):
            if (
                not batches
                or len(batches[-1]) >= self.max_batch_items
                or used + size > self.max_batch_tokens
            ):
                batches.append([])
                used = 0
            batches[-1].append(item)
            used += size
        return batches

    async def _batch(self, question: str, batch: list[LayerItem]) -> dict[str, str]:
        blocks = [
            f"### Claim id: {it.claim_id}\nClaim:\n{format_passage(it.claim_id, it.text)}\n"
            f"Linked summaries:\n{bullet_list(it.context, f'{it.claim_id}.')}"
            for it in batch
        ]
        req = self.templates["layer_summary_batch"].request(
            {"n": len(batch), "items": "\n\n".join(blocks), **self._question_values(question)},
            stage=STAGE_LAYER_BATCH,
            json_schema=batch_schema([it.claim_id for it in batch], self.summary_max_tokens),
            max_tokens=self.summary_max_tokens * len(batch) + 64,
        )
        try:
            resp = await self.llm.chat(req)
        except LLMUnavailableError:
            raise  # no model at all: stop, do not run on without it
        except LLMError:  # e.g. the batch is too long for the server: go claim by claim
            note_fallback(self.llm, STAGE_LAYER_BATCH, len(batch))
            return {}
        return parse_batch(resp.parsed, {it.claim_id for it in batch})

    async def summarize_layer(self, question: str, items: list[LayerItem]) -> LayerOutcome:
        """One summary per item: per-claim calls (faithful) or batch calls with per-claim
        fallbacks for the claims the batch answer missed (batched)."""
        if not items:
            return LayerOutcome({})
        calls: Counter[str] = Counter()
        if self.mode == "faithful" or len(items) == 1:
            texts = await asyncio.gather(*(self._one(question, it) for it in items))
            calls[STAGE_LAYER] += len(items)
            return LayerOutcome(
                {it.claim_id: t for it, t in zip(items, texts, strict=True)}, calls, 1
            )
        batches = self._batches(items)
        singles = [b[0] for b in batches if len(b) == 1]
        multi = [b for b in batches if len(b) > 1]
        found, single_texts = await asyncio.gather(
            asyncio.gather(*(self._batch(question, b) for b in multi)),
            asyncio.gather(*(self._one(question, it) for it in singles)),
        )
        calls[STAGE_LAYER_BATCH] += len(multi)
        calls[STAGE_LAYER] += len(singles)
        summaries: dict[str, str] = {}
        for part in found:
            summaries.update(part)
        summaries.update({it.claim_id: t for it, t in zip(singles, single_texts, strict=True)})
        missing = [it for it in items if it.claim_id not in summaries]
        rounds = 1
        if missing:
            texts = await asyncio.gather(*(self._one(question, it) for it in missing))
            calls[STAGE_LAYER] += len(missing)
            summaries.update({it.claim_id: t for it, t in zip(missing, texts, strict=True)})
            rounds = 2
        return LayerOutcome(summaries, calls, rounds)

    async def compress_cluster(self, question: str, texts: list[str], budget: int) -> str:
        """``texts`` merged by the model into one summary of about ``budget`` tokens."""
        words = max(15, int(budget * 0.6))
        merged = await self._ask(
            "compress", STAGE_COMPRESS, texts=bullet_list(texts), question=question, words=words
        )
        return merged or " ".join(texts)

    def vectors(self, texts: list[str]) -> np.ndarray:
        """Embedder vectors, or TF-IDF rows when there is no embedder."""
        if self.embedder is not None:
            return np.asarray(self.embedder.embed(list(texts)), dtype=np.float32)
        return tfidf_vectors(list(texts))
