"""Lenient parsing of the extract prompts' line formats, and triple validation.

Formats (the prompts ask for exactly these; the parsers forgive the usual deviations):

* claims: one claim per line, ``CLAIM: <text>``; bullets (``-``, ``*``, ``•``), numbering
  (``1.``, ``2)``, ``(3)``, ``[4]``), markdown emphasis (``**CLAIM:**``), ``Claim 2:`` and a
  missing prefix are accepted; preambles ("Here are the claims:"), headings and the
  ``NO_ADDITIONAL_CLAIMS`` token are not claims; an unprefixed line starting in lower case
  continues the previous claim;
* triples: ``SUBJECT: ...`` / ``PREDICATE: ...`` / ``OBJECT: ...`` lines (first of each kept);
* blocks (batched and direct modes): ``CLAIM:`` lines each followed by their
  ``SUBJECT``/``PREDICATE``/``OBJECT`` lines; a new ``CLAIM`` (or a repeated field) starts a
  new block;
* entities: ``ENTITY: ...`` lines (or bullets / numbered lines); relation: ``RELATION: ...``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from biorag.extract.lexicon import STOPWORDS
from biorag.extract.models import Triple

NO_ADDITIONAL = "NO_ADDITIONAL_CLAIMS"
_NO_ADDITIONAL_RE = re.compile(r"\bno[\s_-]*(?:additional|new|more)[\s_-]*claims?\b", re.I)
_LIST_MARK_RE = re.compile(r"^\s*(?:[-*•+>·]+|\(?\d{1,3}[.):\]]|\[\d{1,3}\]|#+)\s*")
_FIELD_RE = re.compile(
    r"^\s*(?:[-*•+]\s*)?(?:\d{1,3}[.)]\s*)?[*_`]*\s*"
    r"(CLAIM|SUBJECT|PREDICATE|RELATION|OBJECT|ENTITY)(?:\s*\d{1,3})?\s*[*_`]*"
    r"(?:\s*[:=]|\s+[-–]\s)\s*[*_`]*",
    re.I,
)
_PREAMBLE_RE = re.compile(
    r"^(?:here\s+(?:are|is)|sure|certainly|okay|ok\b|note\b|the following|below\s+(?:are|is)|"
    r"i\s+(?:have|hope|extracted|found)|these\s+are|existing claims|new claims|additional claims|"
    r"text\s*:|claims?\s*:|output\s*:|answer\s*:|let me|based on|i\s+(?:cannot|can't|am unable)|"
    r"sorry|unfortunately|as an ai)",
    re.I,
)
_PLACEHOLDER = frozenset({"", "n/a", "na", "none", "null", "unknown", "-", "?", "...", "tbd"})
_WORD_RE = re.compile(r"[a-z0-9\u0370-\u03ff]+")


def normalize_claim(text: str) -> str:
    """The dedupe key of a claim: lower case, unified quotes and dashes, single spaces, no
    trailing punctuation."""
    t = text.lower().replace("’", "'").replace("“", '"').replace("”", '"')
    t = re.sub(r"[‐-―]", "-", t)
    t = " ".join(t.split())
    return t.strip(" .;:,!\"'")


def is_no_additional(text: str) -> bool:
    """Whether ``text`` says there is nothing more (``NO_ADDITIONAL_CLAIMS`` or close)."""
    return bool(_NO_ADDITIONAL_RE.search(text))


def _strip_fences(text: str) -> str:
    return re.sub(r"^```[a-zA-Z]*\s*$", "", text, flags=re.M)


def _clean_value(value: str) -> str:
    v = value.strip().strip("*_`").strip()
    if len(v) >= 2 and v[0] == v[-1] and v[0] in "\"'":
        v = v[1:-1].strip()
    return v


def _field(line: str) -> tuple[str | None, str]:
    """``(FIELD, value)`` for a labelled line, ``(None, line without list marks)`` otherwise."""
    m = _FIELD_RE.match(line)
    if m:
        return m.group(1).upper(), _clean_value(line[m.end() :])
    return None, _clean_value(_LIST_MARK_RE.sub("", line, count=1))


def _looks_like_claim(text: str) -> bool:
    if _PREAMBLE_RE.match(text) or is_no_additional(text):
        return False
    if text.endswith(":"):
        return False
    return len(_WORD_RE.findall(text.lower())) >= 3


def parse_claim_lines(text: str) -> list[str]:
    """Claims in an answer (see the module docstring); deduplicated, in order."""
    claims: list[str] = []
    last_prefixed = False
    for raw in _strip_fences(text).splitlines():
        if not raw.strip():
            last_prefixed = False
            continue
        name, value = _field(raw)
        value = _NO_ADDITIONAL_RE.sub("", value).strip() if name == "CLAIM" else value
        if name == "CLAIM":
            if len(_WORD_RE.findall(value.lower())) >= 2:
                claims.append(value)
            last_prefixed = True
            continue
        if name is not None:
            continue
        if (
            claims
            and last_prefixed
            and value[:1].islower()
            and claims[-1][-1:] not in ".!?"
            and not _LIST_MARK_RE.match(raw)
        ):
            claims[-1] = f"{claims[-1]} {value}"
            continue
        if _looks_like_claim(value):
            claims.append(value)
            last_prefixed = False
    return dedupe_texts(claims)


def dedupe_texts(texts: list[str]) -> list[str]:
    seen: set[str] = set()
    out: list[str] = []
    for t in texts:
        k = normalize_claim(t)
        if k and k not in seen:
            seen.add(k)
            out.append(t)
    return out


def parse_triple_fields(text: str) -> dict[str, str]:
    """The first ``SUBJECT``/``PREDICATE``/``OBJECT`` values in ``text`` (``RELATION`` counts as
    the predicate); absent fields are missing from the dict."""
    out: dict[str, str] = {}
    for raw in _strip_fences(text).splitlines():
        name, value = _field(raw)
        if name == "RELATION":
            name = "PREDICATE"
        if name in ("SUBJECT", "PREDICATE", "OBJECT") and name not in out:
            out[name] = value
    return out


def parse_triple(text: str) -> Triple | None:
    """A triple when all three fields are present (possibly empty), else None."""
    f = parse_triple_fields(text)
    if len(f) < 3:
        return None
    return Triple(subject=f["SUBJECT"], predicate=f["PREDICATE"], object=f["OBJECT"])


def _content_words(text: str) -> set[str]:
    return {w for w in _WORD_RE.findall(text.lower()) if w not in STOPWORDS}


def _grounded(value: str, claim_words: set[str]) -> bool:
    """Soft grounding: some content word of ``value`` occurs in the claim (a shared 5-letter
    prefix counts, so "predicted" matches "predict")."""
    words = _content_words(value)
    if not words:
        return False
    prefixes = {w[:5] for w in claim_words if len(w) >= 5}
    return any(w in claim_words or (len(w) >= 5 and w[:5] in prefixes) for w in words)


def triple_problem(triple: Triple | None, claim: str, grounded: bool = True) -> str | None:
    """Why a triple is unusable for ``claim`` (None when it is fine)."""
    if triple is None:
        return "the answer did not contain all three lines SUBJECT:, PREDICATE: and OBJECT:"
    named = (
        ("SUBJECT", triple.subject),
        ("PREDICATE", triple.predicate),
        ("OBJECT", triple.object),
    )
    empty = [name for name, v in named if v.strip().lower() in _PLACEHOLDER]
    if empty:
        return f"the {', '.join(empty)} field{'s were' if len(empty) > 1 else ' was'} empty"
    if grounded:
        words = _content_words(claim)
        for name, v in (("SUBJECT", triple.subject), ("OBJECT", triple.object)):
            if not _grounded(v, words):
                return f"the {name} ({v!r}) is not taken from the claim"
    return None


@dataclass
class Block:
    """One claim of a batched answer with the triple fields that followed it."""

    claim: str
    fields: dict[str, str] = field(default_factory=dict)
    raw: list[str] = field(default_factory=list)  # the triple lines as written

    def triple(self) -> Triple | None:
        if not all(k in self.fields for k in ("SUBJECT", "PREDICATE", "OBJECT")):
            return None
        f = self.fields
        return Triple(subject=f["SUBJECT"], predicate=f["PREDICATE"], object=f["OBJECT"])


def parse_blocks(text: str) -> list[Block]:
    """``CLAIM`` blocks with their triple fields. Fields before any claim form blocks with an
    empty claim (an orphan triple)."""
    blocks: list[Block] = []
    for raw in _strip_fences(text).splitlines():
        if not raw.strip():
            continue
        name, value = _field(raw)
        if name == "RELATION":
            name = "PREDICATE"
        if name == "CLAIM":
            value = _NO_ADDITIONAL_RE.sub("", value).strip()
            if value:
                blocks.append(Block(claim=value))
        elif name in ("SUBJECT", "PREDICATE", "OBJECT"):
            if not blocks or name in blocks[-1].fields:
                blocks.append(Block(claim=""))
            blocks[-1].fields[name] = value
            blocks[-1].raw.append(raw.strip())
        elif (
            name is None
            and blocks
            and blocks[-1].claim
            and not blocks[-1].fields
            and value[:1].islower()
            and blocks[-1].claim[-1:] not in ".!?"
        ):  # a claim wrapped onto the next line
            blocks[-1].claim += " " + value
    return blocks


def parse_entities(text: str) -> list[str]:
    """Entity names: ``ENTITY:`` lines, else list items / short lines; deduplicated."""
    labelled: list[str] = []
    loose: list[str] = []
    for raw in _strip_fences(text).splitlines():
        if not raw.strip():
            continue
        name, value = _field(raw)
        if name == "ENTITY":
            labelled.extend(v.strip() for v in value.split(";") if v.strip())
        elif name is None and value and not _PREAMBLE_RE.match(value) and not value.endswith(":"):
            loose.extend([value.rstrip(".")] if len(value.split()) <= 8 else [])
    found = labelled or loose
    if len(found) == 1 and "," in found[0]:
        found = [v.strip() for v in found[0].split(",")]
    return [e for e in dedupe_texts(found) if e.lower() not in _PLACEHOLDER]


def parse_relation(text: str) -> str | None:
    """The ``RELATION:`` (or ``PREDICATE:``) value, or a lone short line; None when absent."""
    for raw in _strip_fences(text).splitlines():
        name, value = _field(raw)
        if name in ("RELATION", "PREDICATE"):
            return value if value.lower() not in _PLACEHOLDER else None
    lines = [ln.strip() for ln in text.strip().splitlines() if ln.strip()]
    if len(lines) == 1 and 0 < len(lines[0].split()) <= 6 and not lines[0].endswith(":"):
        return lines[0].rstrip(".")
    return None
