"""Entity masking (paper 4.4, appendix K): hide key biomedical entities behind generic labels.

For one item (question, answer options, passages) the entities are found per text, then every
mention is replaced with a label ``<Category><n>`` (``<Gene1>``, ``<Disease2>``) that is the
same wherever the entity occurs in that item:

* detection: with an LLM, one call per text (the question with its options, each passage;
  stage ``mask_entities``) answering ``{"entities": [{"text", "category", "mentions"}]}``
  (``mentions``: other names of the same entity, which get its label). Without an LLM, or when
  an answer does not parse after one retry, the rule-based floor: the biomedical phrases of
  :func:`~biorag.extract.rule_based_entities`, split at "of"/"with", leading numbers, units and
  stop words dropped; gene-like -> Gene, drug word -> Chemical, disease word -> Disease, other
  phrases with a biomedical cue -> OtherEntity, numbers/units and phrases without a cue
  skipped. It is a floor (``EntityMasker.floor``), not the paper's LLM masking.
* labels: surface forms are compared case-insensitively with whitespace collapsed; a form seen
  with several categories takes the most frequent (ties: the first seen). Entities are numbered
  per category in order of first occurrence in question, options (in order), passages; a
  detected entity that occurs nowhere gets no label.
* replacement: one regex pass per text, longest form first, whole words only (no match inside a
  longer word), so a label is never masked again.

Categories outside the 13 of the paper become OtherEntity.
"""

from __future__ import annotations

import asyncio
import dataclasses
import re
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from biorag.errors import LLMError, LLMUnavailableError
from biorag.extract import rule_based_entities
from biorag.extract.entities import is_disease_word, is_drug_word, is_gene_like, looks_biomedical
from biorag.extract.lexicon import QUANTIFIERS, STOPWORDS, UNITS
from biorag.extract.nlp import tokenize
from biorag.llm import budget
from biorag.llm.base import ChatModel
from biorag.llm.evidence import format_passage
from biorag.llm.prompts import PromptTemplate

CATEGORIES = (
    "Gene", "Chemical", "Disease", "Phenotype", "Policy", "MedicalInterventions",
    "ExperimentalTechnique", "Examination", "ComputationalMethod", "Location", "Population",
    "Organism", "OtherEntity",
)  # fmt: skip
STAGE = "mask_entities"
SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "entities": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {
                    "text": {"type": "string"},
                    "category": {"type": "string", "enum": list(CATEGORIES)},
                    "mentions": {"type": "array", "items": {"type": "string"}},
                },
                "required": ["text", "category"],
            },
        }
    },
    "required": ["entities"],
}
_CANON = {c.lower(): c for c in CATEGORIES}
_NUMBER = re.compile(r"[<>≤≥~±]?\d+(?:[.,]\d+)*%?")
_LABEL = re.compile(r"<([A-Za-z]+?)(\d+)>")
_SPLIT = re.compile(r"\s+(?:of|with|without|in|on|for)\s+", re.I)


@dataclass(frozen=True)
class Entity:
    """A detected entity: its surface form, category and other names of it."""

    text: str
    category: str
    mentions: tuple[str, ...] = ()


def key(form: str) -> str:
    """How surface forms are compared: case-insensitive, whitespace collapsed."""
    return " ".join(form.split()).casefold()


def canonical_category(name: Any) -> str:
    """One of :data:`CATEGORIES` ("medical interventions" -> MedicalInterventions)."""
    return _CANON.get(re.sub(r"[\s_\-]+", "", str(name)).lower(), "OtherEntity")


# ------------------------------------------------------------------ the rule-based floor
def _trim(tokens: list[str]) -> list[str]:
    def skippable(w: str) -> bool:
        low = w.lower()
        return low in STOPWORDS or low in UNITS or low in QUANTIFIERS or bool(_NUMBER.fullmatch(w))

    while tokens and skippable(tokens[0]):
        tokens = tokens[1:]
    while tokens and skippable(tokens[-1]):
        tokens = tokens[:-1]
    return tokens


def rule_category(phrase: str, cue: bool = True) -> str | None:
    """The floor's category of a phrase; None for numbers/units or without a biomedical cue."""
    words = [t.text for t in tokenize(phrase) if t.is_word]
    if not _trim(words):
        return None
    if any(is_gene_like(w) for w in words):
        return "Gene"
    if any(is_drug_word(w) for w in words):
        return "Chemical"
    if any(is_disease_word(w) for w in words):
        return "Disease"
    return "OtherEntity" if cue else None


def rule_entities(text: str) -> list[Entity]:
    """The rule-based floor's entities of ``text`` (see the module docstring)."""
    tokens = tokenize(text)
    cue_spans = [
        (t.start, t.end)
        for k, t in enumerate(tokens)
        if looks_biomedical(tokens, k, sentence_start=k == 0 or tokens[k - 1].text in ".!?:")
    ]
    out: list[Entity] = []
    for phrase in rule_based_entities(text):
        for piece in _SPLIT.split(phrase):
            words = _trim(piece.split())
            if not words:
                continue
            core = piece[piece.index(words[0]) : piece.rindex(words[-1]) + len(words[-1])]
            at = text.find(core)
            cue = at >= 0 and any(at < e and s < at + len(core) for s, e in cue_spans)
            words = [w.strip(",;:()") for w in core.split()]
            found = [Entity(w, "Gene") for w in words if is_gene_like(w)]
            found += [Entity(w, "Chemical") for w in words if is_drug_word(w)]
            category = None if found else rule_category(core, cue)
            out += found if found else [Entity(core, category)] if category else []
    seen = {key(e.text) for e in out}  # gene/drug words the phrase chunker missed
    for t in tokens:
        category = "Gene" if is_gene_like(t.text) else "Chemical" if is_drug_word(t.text) else None
        if category and t.is_word and key(t.text) not in seen:
            seen.add(key(t.text))
            out.append(Entity(t.text, category))
    return out


# ------------------------------------------------------------------ labels and replacement
def _form_pattern(form: str) -> str:
    return r"\s+".join(re.escape(w) for w in form.split())


def mask_texts(
    texts: Sequence[str], entities: Sequence[Entity], preset: Mapping[str, str] | None = None
) -> tuple[list[str], dict[str, str]]:
    """``texts`` with every entity mention replaced by its label, and ``{form: label}`` for
    every form (entity text or mention) that occurs in the texts. ``preset`` (``{form:
    label}``, e.g. a question's mapping) fixes those forms' labels; new entities are numbered
    after them."""
    preset = dict(preset or {})
    entities = [*(Entity(f, _LABEL.sub(r"\1", lab)) for f, lab in preset.items()), *entities]
    group_of: dict[str, int] = {}
    forms: list[str] = []  # first-seen spelling of each form key
    votes: list[Counter[str]] = []
    for ent in entities:
        main = key(ent.text)
        if not main:
            continue
        if main not in group_of:
            # a new name whose mention is already grouped (an alias of a known entity) joins it
            known = next((group_of[key(m)] for m in ent.mentions if key(m) in group_of), None)
            if known is None:
                known = len(votes)
                votes.append(Counter())
            group_of[main] = known
            forms.append(ent.text.strip())
        gid = group_of[main]
        votes[gid][canonical_category(ent.category)] += 1
        for m in ent.mentions:
            if key(m) and key(m) not in group_of:
                group_of[key(m)] = gid
                forms.append(m.strip())
    if not group_of:
        return list(texts), {}
    order = sorted({key(f): f for f in forms}.values(), key=lambda f: (-len(key(f)), key(f)))
    pattern = re.compile(
        r"(?<!\w)(?:" + "|".join(_form_pattern(f) for f in order) + r")(?!\w)", re.I
    )
    category = [v.most_common(1)[0][0] for v in votes]  # Counter keeps first-seen order on ties

    def group(form: str) -> int:
        found = group_of.get(key(form))
        if found is None:  # case folding the regex and casefold() disagree on
            found = next(
                group_of[key(f)] for f in order if re.fullmatch(_form_pattern(f), form, re.I)
            )
        return found

    label: dict[int, str] = {}
    numbers: Counter[str] = Counter()
    for form, lab in preset.items():
        if key(form) in group_of:
            label.setdefault(group_of[key(form)], lab)
        lm = _LABEL.fullmatch(lab)
        if lm:
            numbers[lm.group(1)] = max(numbers[lm.group(1)], int(lm.group(2)))
    for text in texts:
        for hit in pattern.finditer(text):
            g = group(hit.group(0))
            if g not in label:
                numbers[category[g]] += 1
                label[g] = f"<{category[g]}{numbers[category[g]]}>"
    masked = [pattern.sub(lambda m: label[group(m.group(0))], t) for t in texts]
    mapping = {f: label[group_of[key(f)]] for f in forms if group_of[key(f)] in label}
    return masked, mapping


def _with_text(passage: Any, text: str) -> Any:
    if isinstance(passage, str):
        return text
    if hasattr(passage, "model_copy"):
        return passage.model_copy(update={"text": text})
    return dataclasses.replace(passage, text=text)


class EntityMasker:
    """Masks the key biomedical entities of QA items (LLM detection, or the rule floor)."""

    def __init__(self, llm: ChatModel | None = None) -> None:
        self.llm = llm
        self.template = PromptTemplate.load("biorag.extract.prompts", "mask_entities")
        self.stats: Counter[str] = Counter()

    @property
    def floor(self) -> bool:
        """True when entities come from the rule-based floor (no LLM)."""
        return self.llm is None

    async def detect(self, text: str) -> list[Entity]:
        """Entities of one text (LLM answer, or the floor when there is no LLM or no answer)."""
        if self.llm is None or not text.strip():
            return rule_entities(text)
        req = self.template.request(
            {"text": format_passage("text", text)},
            stage=STAGE,
            json_schema=SCHEMA,
            max_tokens=budget.JSON_ENTITIES.for_text(text),
        )
        try:
            resp = await self.llm.chat_json(req)
        except LLMUnavailableError:
            raise  # no model at all: stop, do not run on without it
        except LLMError:
            resp = None
        items = resp.parsed.get("entities") if resp and isinstance(resp.parsed, dict) else None
        if not isinstance(items, list):
            self.stats["fallbacks"] += 1
            return rule_entities(text)
        out = []
        for it in items:
            if isinstance(it, dict) and isinstance(it.get("text"), str) and it["text"].strip():
                raw_mentions = it.get("mentions")
                mentions = raw_mentions if isinstance(raw_mentions, list) else []
                # str(): the JSON may hold any value; canonical_category() reads str() of it
                cat = str(it.get("category", it.get("type", "OtherEntity")))
                out.append(Entity(it["text"], cat, tuple(str(m) for m in mentions)))
        self.stats["llm_texts"] += 1
        return out

    async def mask_item(
        self,
        question: str,
        options: Mapping[str, str] | Sequence[str] | None,
        passages: Sequence[Any],
    ) -> tuple[str, Any, list[Any], dict[str, str]]:
        """``(question, options, passages, mapping)`` masked; options keep their keys (a dict)
        or order (a list); passages may be strings or objects with ``text`` (copied)."""
        opts = dict(options) if isinstance(options, Mapping) else list(options or [])
        opt_texts = list(opts.values()) if isinstance(opts, dict) else opts
        p_texts = [p if isinstance(p, str) else p.text for p in passages]
        head = "\n".join([question, *opt_texts])
        found = await asyncio.gather(*(self.detect(t) for t in [head, *p_texts]))
        masked, mapping = mask_texts(
            [question, *opt_texts, *p_texts], [e for ents in found for e in ents]
        )
        q, mo, mp = masked[0], masked[1 : 1 + len(opt_texts)], masked[1 + len(opt_texts) :]
        new_opts: Any = dict(zip(opts, mo, strict=True)) if isinstance(opts, dict) else mo
        new_passages = [_with_text(p, t) for p, t in zip(passages, mp, strict=True)]
        return q, new_opts, new_passages, mapping


class MaskScope:
    """One masked question's labels, carried to retrieval (``eval --mask-entities`` on a setting
    that searches an index): a query a method wrote from the masked question is searched with
    the real names, and what comes back is masked with the question's labels (new entities in
    the passages get new ones), so question, options and evidence stay aligned."""

    def __init__(self, masker: EntityMasker, mapping: Mapping[str, str]) -> None:
        self.masker = masker
        self.mapping = dict(mapping)
        back: dict[str, str] = {}
        for form, lab in self.mapping.items():
            back.setdefault(lab, form)
        self._back = back
        alts = "|".join(re.escape(lab) for lab in sorted(back, key=len, reverse=True))
        self._labels = re.compile(alts) if back else None

    def unmask(self, text: str) -> str:
        """``text`` with each label replaced by the first form it stands for."""
        if self._labels is None:
            return text
        return self._labels.sub(lambda m: self._back[m.group(0)], text)

    async def mask_passages(self, passages: Sequence[Any]) -> list[Any]:
        """``passages`` (strings or objects with ``text``, copied) masked with the labels."""
        texts = [p if isinstance(p, str) else p.text for p in passages]
        found = await asyncio.gather(*(self.masker.detect(t) for t in texts))
        masked, _ = mask_texts(texts, [e for ents in found for e in ents], preset=self.mapping)
        return [_with_text(p, t) for p, t in zip(passages, masked, strict=True)]
