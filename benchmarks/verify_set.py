"""The labelled set the sentence verifiers are measured on (``bench_verify.py``), built from the
BioASQ Task B golden files (``../shared/data/mirage/rawdata/bioasq``).

Each item is one ideal-answer sentence with up to ``MAX_PASSAGES`` passages it is taken to
cite, and a label:
- ``supported``: the sentence against its own question's gold snippets (the experts wrote the
  ideal answer from them);
- ``not_supported``: the sentence against the gold snippets of the nearest other question (the
  most similar question body by MiniLM cosine, below the paraphrase check's 0.92): same topic,
  other evidence;
- ``contradicted``: the sentence with its first number changed, or negated (a "not" after its
  first auxiliary verb), against its own gold snippets;
- ``partly_supported``: the sentence joined to a sentence of the nearest other question's ideal
  answer, against its own gold snippets (half of it is backed). The issue asks for the first
  three; this fourth is what lets the "partly" band be placed at all.

Every sentence is used at most once. Tuning uses 7b-10b (``dev``); figures are reported on 11b
(``test``), which nothing is tuned on (as the data README asks).
"""

from __future__ import annotations

import json
import random
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

MAX_PASSAGES = 5
PARAPHRASE = 0.92
SPLITS = {"dev": ("Task7", "Task8", "Task9", "Task10"), "test": ("Task11",)}
_AUX = re.compile(
    r"\b(is|are|was|were|can|could|may|might|should|will|would|does|do|did|has|have|had)\b"
    r"(?!\s+not\b|n't)",
    re.IGNORECASE,
)
_NUM = re.compile(r"(?<![\w.-])(\d+(?:\.\d+)?)(?![\w.-]*\d)(?!-)")


@dataclass
class Item:
    id: str
    question_id: str
    sentence: str
    passages: list[str]
    label: str
    how: str = ""  # contradicted: "number" or "negation"; not_supported: the other question
    meta: dict[str, Any] = field(default_factory=dict)


def load_questions(data: Path, split: str) -> list[dict[str, Any]]:
    """The split's golden questions with an ideal answer and snippets, each id once."""
    seen, out = set(), []
    root = data / "mirage" / "rawdata" / "bioasq"
    for folder in sorted(root.iterdir()):
        if not folder.name.startswith(SPLITS[split]):
            continue
        for f in sorted(folder.glob("*.json")):
            for q in json.loads(f.read_text(encoding="utf-8"))["questions"]:
                ideal = q.get("ideal_answer")
                ideal = ideal[0] if isinstance(ideal, list) and ideal else ideal
                snippets = list(dict.fromkeys(
                    " ".join(s["text"].split()) for s in q.get("snippets") or [] if s.get("text")
                ))  # fmt: skip
                if q["id"] in seen or not isinstance(ideal, str) or not snippets:
                    continue
                seen.add(q["id"])
                out.append({"id": q["id"], "body": q["body"].strip(), "ideal": ideal,
                            "snippets": snippets[:MAX_PASSAGES]})  # fmt: skip
    return out


def answer_sentences(ideal: str) -> list[str]:
    from biorag.corpus.sentences import sentence_texts

    return [s.strip() for s in sentence_texts(ideal) if 6 <= len(s.split()) <= 60]


def change_number(sentence: str) -> str | None:
    """``sentence`` with its first number (not a year) changed, or None."""
    for m in _NUM.finditer(sentence):
        value = m.group(1)
        if re.fullmatch(r"(19|20)\d\d", value):
            continue
        if "." in value:
            new = f"{float(value) * 2 + 1:.{len(value.split('.')[1])}f}"
        else:
            new = str(int(value) * 2 + 3)
        return sentence[: m.start()] + new + sentence[m.end() :]
    return None


def negate(sentence: str) -> str | None:
    """``sentence`` with "not" after its first auxiliary verb, or None."""
    m = _AUX.search(sentence)
    if m is None:
        return None
    return sentence[: m.end()] + " not" + sentence[m.end() :]


def build(
    data: Path, split: str, per_class: int, embedder: Any, seed: int = 13, avoid: Any = None
) -> tuple[list[Item], Any, int]:
    """``per_class`` items of each label for ``split`` (fewer where the split runs out), the
    split's question vectors, and how many questions were left out as rewordings of a question
    in ``avoid`` (another split's question vectors: a question BioASQ asked again)."""
    qs = load_questions(data, split)
    vectors = embedder.embed([q["body"] for q in qs])
    dropped = 0
    if avoid is not None and len(avoid):
        keep = (vectors @ avoid.T).max(axis=1) < PARAPHRASE
        dropped = int((~keep).sum())
        qs = [q for q, k in zip(qs, keep, strict=True) if k]
        vectors = vectors[keep]
    sims = vectors @ vectors.T
    nearest = []
    for i in range(len(qs)):
        order = sims[i].argsort()[::-1]
        nearest.append(next(int(j) for j in order if j != i and sims[i, j] < PARAPHRASE))
    rng = random.Random(seed)
    pool = [(i, s) for i, q in enumerate(qs) for s in answer_sentences(q["ideal"])]
    rng.shuffle(pool)
    items: dict[str, list[Item]] = {
        "supported": [], "partly_supported": [], "not_supported": [], "contradicted": [],
    }  # fmt: skip
    others = [answer_sentences(q["ideal"]) for q in qs]
    turn = 0
    for i, sentence in pool:
        if all(len(v) >= per_class for v in items.values()):
            break
        label = list(items)[turn % len(items)]
        turn += 1
        if len(items[label]) >= per_class:
            label = min(items, key=lambda k: len(items[k]))
        q = qs[i]
        n = len(items[label])
        if label == "supported":
            item = Item(f"{split}-s{n}", q["id"], sentence, q["snippets"], label)
        elif label == "partly_supported":
            extra = others[nearest[i]]
            if not extra:
                continue
            joined = sentence.rstrip(".") + "; in addition, " + extra[0][0].lower() + extra[0][1:]
            item = Item(f"{split}-p{n}", q["id"], joined, q["snippets"], label,
                        how=qs[nearest[i]]["id"], meta={"original": sentence})  # fmt: skip
        elif label == "not_supported":
            other = qs[nearest[i]]
            cosine = round(float(sims[i, nearest[i]]), 4)
            item = Item(f"{split}-n{n}", q["id"], sentence, other["snippets"], label,
                        how=other["id"], meta={"cosine": cosine})  # fmt: skip
        else:
            changed, how = None, ""
            if rng.random() < 0.5:
                changed, how = change_number(sentence), "number"
            if changed is None:
                changed, how = negate(sentence), "negation"
            if changed is None:
                changed, how = change_number(sentence), "number"
            if changed is None:
                continue
            item = Item(f"{split}-c{n}", q["id"], changed, q["snippets"], label, how=how,
                        meta={"original": sentence})  # fmt: skip
        items[label].append(item)
    return [it for label in items for it in items[label]], vectors, dropped
