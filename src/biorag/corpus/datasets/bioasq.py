"""BioASQ Task B golden files: ``{"questions": [{id, body, type, documents, snippets, ...}]}``.

``path`` is one file, a list of files, or a folder (every ``*.json`` below it, in natural order:
7B1 before 10B1). Per type:

- ``yesno``: options A=yes B=no, ``gold`` = the letter; ``meta.exact_answer`` keeps the raw one.
- ``factoid`` / ``list``: ``gold`` = answers as ``list[list[str]]`` (each a list of synonyms).
  ``exact_answer`` may be ``[[syn, ..], ..]``, a flat list or a string: a flat list is one
  answer's synonyms for factoid, one answer per entry for list.
- ``summary``: ``gold`` = the ideal answer (the first, when a list).

Every item: ``gold_docs`` = the PMIDs of ``documents`` (last URL segment), ``gold_snippets`` =
the snippet texts (distinct, in order), ``meta.gold_snippet_spans`` = their places in their
articles (the stripped text's ``[begin, end)``), ``meta.gold_snippets_official`` = every gold
snippet's offsets as given (what the official evaluator reads), ``meta.ideal_answer`` = all
ideal answers, ``subset`` = the task (``"11b"`` from ``11B1_golden.json``), ``meta.batch`` =
``"11B1"``.
The curated ``body``/``type`` are used, never the ``_body``/``_type`` drafts.

``split``: a type, or several joined by commas (``"factoid,list"``). ``setting``: None or
``"open"`` (no context), or ``"snippets"``: ``context`` = the gold snippets (an oracle).
"""

from __future__ import annotations

import re
from functools import partial
from typing import Any

from biorag.corpus.datasets.base import QAItem
from biorag.corpus.datasets.common import (
    Collector,
    DatasetLoad,
    PathArg,
    check_choice,
    collect_files,
    format_error,
    id_line,
    read_json,
    text_field,
)
from biorag.corpus.loaders.bioasq import snippet_offsets
from biorag.errors import ConfigError

NAME = "bioasq"
TYPES = ("yesno", "factoid", "list", "summary")
SETTINGS = ("open", "snippets")
EXPECTED = 'BioASQ Task B JSON ({"questions": [{id, body, type, documents, snippets, ...}]})'
_BATCH_RE = re.compile(r"(\d+)B(\d+)", re.IGNORECASE)


def _answers(value: Any, qtype: str) -> list[list[str]]:
    """``exact_answer`` of a factoid/list question as a list of synonym lists."""
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list):
        raise ValueError(f"'exact_answer' is {type(value).__name__}, expected a list")
    flat = all(isinstance(v, str) for v in value)
    groups = [value] if flat and qtype == "factoid" else value
    out: list[list[str]] = []
    for g in groups:
        syns = [g] if isinstance(g, str) else g
        if not isinstance(syns, list) or not all(isinstance(s, str) for s in syns):
            raise ValueError("'exact_answer' holds something other than strings")
        syns = [s.strip() for s in syns if s.strip()]
        if syns:
            out.append(syns)
    if not out:
        raise ValueError("'exact_answer' is empty")
    return out


def _pmids(documents: Any) -> list[str]:
    """PMIDs from the document URLs (``http://www.ncbi.nlm.nih.gov/pubmed/34687634``)."""
    if not isinstance(documents, list):
        raise ValueError("'documents' is not a list")
    out: list[str] = []
    for url in documents:
        pmid = str(url).rstrip("/").rsplit("/", 1)[-1].strip()
        if pmid and pmid not in out:
            out.append(pmid)
    return out


def _gold_span(snippet: dict, text: str) -> dict[str, Any] | None:
    """A gold snippet's place in its article (for the snippet measures), or None."""

    url = snippet.get("document")
    where = snippet_offsets(snippet, text)
    if not isinstance(url, str) or where is None:
        return None
    pmid = url.rstrip("/").rsplit("/", 1)[-1].strip()
    section = str(snippet.get("beginSection") or "")
    return {"document": pmid, "section": section, "begin": where[0], "end": where[1]}


def official_snippet(snippet: Any) -> dict[str, Any] | None:
    """A gold snippet as the BioASQ evaluator reads it (its offsets as given, missing ones 0),
    for official snippet scoring; None when it is not a snippet object."""
    if not isinstance(snippet, dict) or not isinstance(snippet.get("document"), str):
        return None
    ends = [snippet.get(k, 0) for k in ("offsetInBeginSection", "offsetInEndSection")]
    if not all(isinstance(v, int) and not isinstance(v, bool) for v in ends):
        return None
    return {
        "document": snippet["document"].rstrip("/").rsplit("/", 1)[-1].strip(),
        "section": str(snippet.get("beginSection") or ""),
        "end_section": str(snippet.get("endSection") or ""),
        "begin": ends[0],
        "end": ends[1],
    }


def _item(q: Any, task: str, batch: str, with_snippets: bool) -> QAItem:
    """One item from a BioASQ question; :class:`ValueError` says what is wrong with it."""
    if not isinstance(q, dict):
        raise ValueError(f"not an object ({type(q).__name__})")
    qid = text_field(q, "id").strip()
    body = text_field(q, "body")
    qtype = str(q.get("type", "")).strip().lower()
    if qtype not in TYPES:
        raise ValueError(f"'type' {q.get('type')!r} is not one of {', '.join(TYPES)}")
    snippets = q.get("snippets", [])
    if not isinstance(snippets, list):
        raise ValueError("'snippets' is not a list")
    texts: list[str] = []
    spans: list[dict[str, Any]] = []
    for sn in snippets:
        t = sn.get("text") if isinstance(sn, dict) else None
        if isinstance(t, str) and t.strip() and t.strip() not in texts:
            texts.append(t.strip())
            span = _gold_span(sn, t)
            if span is not None:
                spans.append(span)
    ideal = q.get("ideal_answer")
    ideals = [ideal] if isinstance(ideal, str) else ideal if isinstance(ideal, list) else []
    ideals = [s for s in ideals if isinstance(s, str) and s.strip()]
    exact = q.get("exact_answer")
    official = [o for o in map(official_snippet, snippets) if o is not None]
    meta: dict[str, Any] = {"batch": batch, "ideal_answer": ideals, "gold_snippet_spans": spans,
                            "gold_snippets_official": official}  # fmt: skip
    options: dict[str, str] = {}
    gold: str | list[list[str]]
    if qtype == "yesno":
        raw = exact[0] if isinstance(exact, list) and len(exact) == 1 else exact
        word = raw.strip().lower() if isinstance(raw, str) else None
        if word not in ("yes", "no"):
            raise ValueError(f"yesno 'exact_answer' is {exact!r}, expected 'yes' or 'no'")
        options, gold, meta["exact_answer"] = {"A": "yes", "B": "no"}, "AB"[word == "no"], exact
    elif qtype == "summary":
        if not ideals:
            raise ValueError("summary question without an 'ideal_answer'")
        gold = ideals[0].strip()
    else:
        gold = _answers(exact, qtype)
    return QAItem(
        id=qid,
        dataset=NAME,
        text=body.strip(),
        options=options,
        gold=gold,
        question_type=qtype,  # type: ignore[arg-type]
        passages=list(texts) if with_snippets else [],
        gold_docs=_pmids(q.get("documents", [])),
        gold_snippets=texts,
        subset=task,
        meta=meta,
    )


def _where(i: int, q: Any) -> str:
    """``questions[i]``, with the question's id when it has one."""
    qid = q.get("id") if isinstance(q, dict) else None
    return f"questions[{i}]" + (f" ({qid})" if isinstance(qid, str) else "")


def _types(split: str | None) -> set[str] | None:
    """The question types ``split`` names (None = all)."""
    if split is None:
        return None
    wanted = {s.strip().lower() for s in split.split(",") if s.strip()}
    if not wanted or not wanted <= set(TYPES):
        raise ConfigError(f"bioasq: split {split!r} must name question types: {', '.join(TYPES)}")
    return wanted


def load(
    path: PathArg,
    *,
    split: str | None = None,
    setting: str | None = None,
    limit: int | None = None,
) -> DatasetLoad:
    """Load BioASQ Task B golden files; ``split`` keeps some question types."""
    check_choice(setting, SETTINGS, "setting", NAME)
    types = _types(split)
    col = Collector(NAME)
    for file in collect_files(path, EXPECTED, "*.json"):
        data, raw = read_json(file, EXPECTED)
        questions = data.get("questions") if isinstance(data, dict) else None
        if not isinstance(questions, list):
            found = "it has no top-level 'questions' list"
            fix = "pass BioASQ Task B golden files (e.g. 11B1_golden.json) or their folder"
            raise format_error(file, EXPECTED, found, fix)
        m = _BATCH_RE.search(file.name)
        task, batch = (f"{m[1]}b", f"{m[1]}B{m[2]}") if m else ("", file.stem)
        records = ((None, _where(i, q), q) for i, q in enumerate(questions))
        make = partial(_item, task=task, batch=batch, with_snippets=setting == "snippets")
        fix = "pass BioASQ Task B golden files"
        col.read_records(file, records, make, EXPECTED, fix, partial(id_line, raw))
    return col.finish(
        limit=limit,
        split=split,
        setting=setting,
        keep=None if types is None else (lambda it: it.question_type in types),
    )
