"""Output budgets: how many tokens each operator lets the model write, and where its format ends.

Every request sets ``max_tokens`` from the size of the answer it expects, so a model that does
not stop (small ones often do not: SmolLM2-135M runs claim extraction to any limit it is given)
is cut where a good answer would have ended, not at ``llm.max_tokens``. The numbers live here,
named, so they can be read and tuned in one place:

=========================  =====================================================  ============
answer                     operators (stage)                                      max_tokens
=========================  =====================================================  ============
first token's logprobs     LLM reranker (``rerank``)                              1
yes / no                   relevance judges, component judges, IP-RAR relevance   8
``{"choice": n}``          strata normalization                                   16
``{"answer": "<letter>"}`` letter extraction (``answer_extract``)                 24
one line                   query rewrite (96), triple relation (32)               32-96
SUBJECT/PREDICATE/OBJECT   triples, repair, KG triplets (per pair or sentence)    64
two ENTITY lines           triple fallback entities                               48
reasoning + letter         readers (``answer``), VectorGraphRAG's answer          384
cited short answer         free-text reader, IP-RAR draft (256) / final (512)     320
lists of N items           N * per item + 32 (:class:`ListBudget`), N bounded by  see below
                           the input (claims of a chunk) or known (a batch)
rewritten claims           1.5 x the claims sent + 32 (:func:`rewrite_budget`)
summaries                  the word target x 1.4 + 32 (:func:`words_budget`)
=========================  =====================================================  ============

Per-item sizes of the list formats: a claim 40 tokens, a claim with its triple lines 72, a
SUBJECT/PREDICATE/OBJECT block 32, a JSON triplet 48, an ENTITY line 10, a JSON verdict 8-24.
How many items an input can hold is bounded by its length (:meth:`ListBudget.items`: about one
claim per 15 words of text, at least 2, at most 64); operators that take a ``max_tokens`` option
use it as the ceiling of the estimate.

Stop sequences are added only where the format has a natural end that a valid answer never
contains: the label of the next few-shot example (``"\\nText:"``, ``"\\nClaim:"``,
``"\\nQuestion:"``, ``"\\nSentence:"``) that a small model goes on to invent. JSON requests get
no stop sequence (a closing brace or bracket also occurs inside valid JSON).

A reasoning model spends part of ``max_tokens`` on its thinking; these budgets are for models
that answer directly.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

#: characters per token of English biomedical text (an estimate on the generous side)
CHARS_PER_TOKEN = 3.5
#: tokens a list answer spends beyond its items (an opening phrase, brackets, a last newline)
OVERHEAD = 32

# -- answers of a fixed size ---------------------------------------------------------------------
LOGPROB_ONLY = 1  # the first token's log-probabilities are the answer (LLM reranker)
YES_NO = 8  # "Yes" / "No", with room for "Answer: Yes."
CHOICE_JSON = 16  # {"choice": 3} / {"choice": null}
LETTER_JSON = 24  # {"answer": "B"}, with room for whitespace a JSON mode adds
RELATION_LINE = 32  # "RELATION: <a few words>"
ENTITY_LINES = 48  # two "ENTITY: <name>" lines
TRIPLE = 64  # "SUBJECT: ...\nPREDICATE: ...\nOBJECT: ..."
QUERY_LINE = 96  # a search query on one line
HYDE = 256  # a hypothetical answer passage of a few sentences
READ_REASONING = 384  # "reason in a few sentences, then say which option" (as text or JSON)
CITED_ANSWER = 320  # at most five sentences, each ending in [n] citations
DRAFT_ANSWER = 256  # IP-RAR's concise draft answer
FINAL_ANSWER = 512  # IP-RAR's final answer integrating the passages
JUDGE_SCORE = 128  # {"score": 4, "reason": "one sentence"}
GROUNDED_VERDICT = 128  # {"grounded": "yes", "reason": "one sentence"}
GENERATED_QA = 768  # a BioCDQA pair: question, 1-3 sentence answer, verbatim source sentences
DOC_FACTS = 256  # {"methods": [...], "datasets": [...], "domains": [...]}: short names
PREREASON = 384  # IP-RAR's keywords, synonyms and a virtual answer
EXACT_YESNO = 16  # {"answer": "yes"}
EXACT_FACTOID = 128  # {"answer": [at most 5 short names]}
EXACT_LIST = 512  # {"answer": [every item, each a short name]}
TEST_SUMMARY = 200  # "one short paragraph" per claim of interest
LAYER_SUMMARY = 400  # one claim summarized in its linked context (LLMSummarizer's default)

# -- stop sequences ------------------------------------------------------------------------------
STOP_TEXT = ["\nText:"]  # claim lists: the next few-shot example would start "Text:"
STOP_CLAIM = ["\nClaim:"]  # triples of one claim: the next example starts "Claim:"
STOP_QUESTION = ["\nQuestion:", "\nCorrect answer:"]  # KG triplet of a QA pair
STOP_SENTENCE = ["\nSentence:"]  # KG triplet of a sentence


def estimate_tokens(text: str) -> int:
    """A quick token estimate of ``text`` (characters / :data:`CHARS_PER_TOKEN`)."""
    return math.ceil(len(text) / CHARS_PER_TOKEN)


def _cap(tokens: int, cap: int | None) -> int:
    return max(1, min(tokens, cap) if cap is not None else tokens)


@dataclass(frozen=True)
class ListBudget:
    """The budget of an answer that lists items: ``items * per_item + overhead`` tokens.

    The number of items is known (a batch of N questions) or bounded by the input: one item per
    ``words_per_item`` words of it, between ``min_items`` and ``max_items``.
    """

    per_item: int
    words_per_item: float = 15.0
    min_items: int = 2
    max_items: int = 64
    overhead: int = OVERHEAD

    def items(self, text: str) -> int:
        """How many items an answer about ``text`` can reasonably hold."""
        n = math.ceil(len(text.split()) / self.words_per_item)
        return max(self.min_items, min(self.max_items, n))

    def tokens(self, n_items: int, cap: int | None = None) -> int:
        """The budget of ``n_items`` items (at most ``cap``)."""
        return _cap(max(1, n_items) * self.per_item + self.overhead, cap)

    def for_text(self, text: str, cap: int | None = None) -> int:
        """The budget of an answer listing the items of ``text`` (at most ``cap``)."""
        return self.tokens(self.items(text), cap)

    def for_more(self, text: str, cap: int | None = None) -> int:
        """The budget of a second pass (gleaning) over ``text``: the items the first pass
        missed, half of what :meth:`items` allows."""
        return self.tokens(max(self.min_items, math.ceil(self.items(text) / 2)), cap)


#: "CLAIM: ..." lines of a chunk (claims, plain claims; gleaning gets half the items)
CLAIMS = ListBudget(per_item=40)
#: a claim line with its SUBJECT/PREDICATE/OBJECT lines and a blank line (batched extraction)
CLAIMS_TRIPLES = ListBudget(per_item=72)
#: SUBJECT/PREDICATE/OBJECT blocks of a chunk (direct triples, entity-pair relations)
TRIPLE_BLOCKS = ListBudget(per_item=32)
#: "ENTITY: ..." lines of a chunk (about one entity per 5 words)
ENTITIES = ListBudget(per_item=10, words_per_item=5.0, min_items=4, max_items=80)
#: typed JSON triplets of an abstract ({"subject", "subject_type", "relation", ...}; entity
#: relations are sparser than claims: about one per 20 words)
JSON_TRIPLETS = ListBudget(per_item=48, words_per_item=20.0, min_items=4, max_items=32)
#: JSON strings in {"claims": [...]} (judge-side key claims, claims of a summary)
JSON_CLAIMS = ListBudget(per_item=40)
#: JSON entities {"text", "category", "mentions"} of a short text (masking)
JSON_ENTITIES = ListBudget(per_item=32, words_per_item=4.0, min_items=4, max_items=40)


def fixed_list(n_items: int, per_item: int, cap: int | None = None) -> int:
    """The budget of a list of a known ``n_items`` items of ``per_item`` tokens each."""
    return ListBudget(per_item=per_item).tokens(n_items, cap)


#: per-item sizes of the batched JSON answers with a known number of items
BATCH_VERDICT = 8  # "3": "yes"
BATCH_RELEVANCE = 24  # {"id": "3", "relevant": true}
BATCH_SUPPORT = 16  # {"id": "3", "score": 85}
BATCH_TRIPLET = 48  # {"id": 3, "subject": ..., "predicate": ..., "object": ...}
SUMMARY_ENTRY = 24  # {"claim_id": "...", "summary": ...} around each summary of a batch


#: a rewrite (decontextualized claims) is about this many times as long as what it rewrites
REWRITE_FACTOR = 1.5


def rewrite_budget(text: str, cap: int | None = None) -> int:
    """The budget of an answer that rewrites ``text`` (longer by :data:`REWRITE_FACTOR`)."""
    return _cap(math.ceil(estimate_tokens(text) * REWRITE_FACTOR) + OVERHEAD, cap)


def words_budget(words: int) -> int:
    """The budget of a text of at most ``words`` words (about 1.4 tokens a word, plus slack)."""
    return math.ceil(words * 1.4) + OVERHEAD
