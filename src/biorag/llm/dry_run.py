"""A dry-run model: well-formed answers for every biorag prompt, with no model behind them.

Select it with ``llm.backend = "mock"`` and ``llm.mock_script = "dry-run"``. Each stage gets an
answer in the format its operator parses (``CLAIM:`` lines built from the text's sentences,
``SUBJECT:``/``PREDICATE:``/``OBJECT:`` lines from the no-LLM pattern extractor, JSON verdicts and
summaries keyed by the ids in the prompt, ``{"answer": "A"}``). It exists to count what a
pipeline would ask of a real model (calls, tokens, sequential rounds) and to exercise the LLM
code paths end to end; its answers carry no knowledge.
"""

from __future__ import annotations

import json
import re

from biorag.llm.evidence import parse_passages
from biorag.llm.types import ChatRequest

DRY_RUN = "dry-run"
_ID_LINE = re.compile(r"^### Claim id: (\S+)", re.M)
_NUMBERED = re.compile(r"^\[(\d+)\] ", re.M)
_QTYPE = re.compile(r"^Question type: (yesno|factoid|list)\b", re.M)


def _after(text: str, marker: str) -> str:
    i = text.rfind(marker)
    return text[i + len(marker) :].strip() if i >= 0 else text.strip()


def _texts(prompt: str) -> list[str]:
    """The texts of the prompt's passage blocks, in order."""
    return [text for _, text in parse_passages(prompt)]


def _first_passage(prompt: str, marker: str) -> str:
    """The first passage block's text (the text after ``marker`` in a prompt without blocks)."""
    texts = _texts(prompt)
    return texts[0] if texts else _after(prompt, marker)


def _numbers(prompt: str) -> list[int]:
    """The numeric passage ids of the prompt (the items a batched prompt numbers; ``[n] ``
    line prefixes in a prompt without blocks)."""
    ids = [pid for pid, _ in parse_passages(prompt)] or _NUMBERED.findall(prompt)
    return sorted({int(pid) for pid in ids if pid.isdigit()})


def _sentences(text: str) -> list[str]:
    from biorag.corpus.sentences import split_sentences

    return [text[s:e].strip() for s, e in split_sentences(text) if e - s > 20]


def _triple_lines(claim: str) -> str:
    from biorag.extract.entities import rule_based_triple
    from biorag.extract.patterns import pattern_triple

    t = pattern_triple(claim) or rule_based_triple(claim)
    return f"SUBJECT: {t.subject}\nPREDICATE: {t.predicate}\nOBJECT: {t.object}"


def _first_words(text: str, n: int = 60) -> str:
    return " ".join(text.split()[:n])


def _exact_answer(prompt: str) -> str:
    """``{"answer": ...}`` in the format of the question type the prompt names: "yes", or
    capitalised words of the passages (up to 5 for a factoid, 3 for a list)."""
    m = _QTYPE.search(prompt)
    qtype = m.group(1) if m else "factoid"
    if qtype == "yesno":
        return json.dumps({"answer": "yes"})
    passages = "\n".join(_texts(prompt)) or _after(prompt, "Passages:").split("\nQuestion:")[0]
    names = list(dict.fromkeys(re.findall(r"\b[A-Z][A-Za-z0-9-]{2,}\b", passages)))
    return json.dumps({"answer": names[: 5 if qtype == "factoid" else 3] or ["dry run"]})


def _biocdqa_pair(prompt: str) -> str:
    """A question of the asked type on the first paper, its first sentence quoted verbatim."""
    m = re.search(r'of type "(\w[\w ]*)"', prompt)
    qtype = m.group(1) if m else "factual"
    abstract = re.search(r"^Abstract: (.*)$", "\n".join(_texts(prompt)) or prompt, re.M)
    sents = _sentences(abstract.group(1)) if abstract else []
    quote = sents[0] if sents else (abstract.group(1).strip() if abstract else "")
    return json.dumps(
        {
            "question": f"What is reported about {_first_words(quote, 8) or 'this'}?",
            "type": qtype,
            "ideal_answer": quote or "dry run",
            "source_sentences": [quote] if quote else [],
        }
    )


def dry_run_responder(req: ChatRequest) -> str:
    """The answer a well-behaved model would give to ``req``, in format only."""
    prompt = req.last_user_message()
    stage = req.stage
    if stage == "rewrite":
        return _after(prompt, "Question:").splitlines()[0]
    if stage == "hyde":
        return "A. " + _first_words(_after(prompt, "Question:"), 40)
    if stage in ("claims", "claims_plain"):
        return "\n".join(f"CLAIM: {s}" for s in _sentences(_first_passage(prompt, "Text:")))
    if stage == "claims_triples":
        sents = _sentences(_first_passage(prompt, "Text:"))
        return "\n\n".join(f"CLAIM: {s}\n{_triple_lines(s)}" for s in sents)
    if stage == "claims_gleaning":
        return "NO_ADDITIONAL_CLAIMS"
    if stage in ("triples", "triples_repair"):
        return _triple_lines(_first_passage(prompt, "Claim:").splitlines()[0])
    if stage == "triples_entities":
        from biorag.extract.entities import rule_based_entities

        ents = rule_based_entities(_first_passage(prompt, "Claim:").splitlines()[0])[:2]
        return "\n".join(f"ENTITY: {e}" for e in ents)
    if stage == "triples_relation":
        return "RELATION: is associated with"
    if stage == "denoise":
        if req.json_schema is not None or "JSON" in prompt:
            return json.dumps({str(n): "yes" for n in _numbers(prompt)})
        return "Yes"
    if stage == "layer_summary_batch" or (stage == "coi_test_summary" and _ID_LINE.search(prompt)):
        marker = "Claim:" if stage == "layer_summary_batch" else "Central claim:"
        ids = _ID_LINE.findall(prompt)
        blocks = re.split(r"^### Claim id: \S+\n", prompt, flags=re.M)[1:]
        return json.dumps(
            {
                "summaries": [
                    {"claim_id": cid, "summary": _first_passage(block, marker).splitlines()[0]}
                    for cid, block in zip(ids, blocks, strict=False)
                ]
            }
        )
    if stage == "coi_test_summary":
        return _first_words(_first_passage(prompt, "Central claim:"), 60)
    if stage == "layer_summary":
        return _first_passage(prompt, "Claim:").splitlines()[0]
    if stage == "compress":
        return _first_words(" ".join(_texts(prompt)) or prompt, 60)
    if stage == "answer" and req.json_schema is not None:
        return json.dumps({"reasoning": "dry run", "answer": "A"})
    if stage == "answer":  # reasoning or a cited free-text answer; never an echo of the prompt
        return "Dry-run answer: A [1]."
    if stage == "iprar_answer":
        return "Dry-run draft answer [1]."
    if stage == "raptor_summary":
        return _first_words(" ".join(_texts(prompt)) or prompt, 60)
    if stage == "kg_answer":
        return "The answer is A."
    if stage == "kg_triplets":
        question = _first_words(_after(prompt, "Question:").splitlines()[0], 6)
        answer = _after(prompt, "Correct answer:").splitlines()[0]
        return f"SUBJECT: {question}\nPREDICATE: has the answer\nOBJECT: {answer}"
    if stage == "kg_triplets_text":
        return _triple_lines(_first_passage(prompt, "Sentence:").splitlines()[0])
    if stage == "kg_triplets_batch":
        numbers = _numbers(prompt)
        return json.dumps(
            [
                {"id": n, "subject": "item", "predicate": "relates to", "object": f"answer {n}"}
                for n in numbers
            ]
        )
    if stage == "iprar_prereason":
        question = _after(prompt, "Question:").splitlines()[0]
        words = [w for w in re.findall(r"[A-Za-z][A-Za-z0-9-]{3,}", question)][:5]
        return json.dumps({"keywords": words, "synonyms": {}, "virtual_answer": question})
    if stage == "iprar_relevance":
        return "Yes"
    if stage == "crag_evaluate":
        return json.dumps({"scores": [{"id": str(n), "score": 80} for n in _numbers(prompt)]})
    if stage == "crag_keywords":
        return _first_words(_after(prompt, "Question:").splitlines()[0], 6)
    if stage == "iprar_support":
        return json.dumps({"scores": [{"id": str(n), "score": 80} for n in _numbers(prompt)]})
    if stage == "iprar_final":
        return "Dry-run answer [1]."
    if stage == "iprar_relevance_batch":
        verdicts = [{"id": str(n), "relevant": True} for n in _numbers(prompt)]
        return json.dumps({"verdicts": verdicts})
    if stage == "exact_answer":
        return _exact_answer(prompt)
    if stage == "strata_triplets":
        return "[]"
    if stage == "strata_doc":
        return json.dumps({"methods": [], "datasets": [], "domains": []})
    if stage == "answer_extract":
        return '{"answer": "A"}'
    if stage == "rerank":
        return "Yes"
    if stage == "biocdqa_generate":
        return _biocdqa_pair(prompt)
    if stage == "biocdqa_ground":
        return json.dumps({"grounded": "yes", "reason": "dry run"})
    if stage == "strata_normalize":
        return json.dumps({"choice": 0})
    if stage == "judge_score":
        return json.dumps({"score": 3, "reason": "dry run"})
    if stage in ("eval_key_claims", "eval_summary_claims"):  # component metrics' claim lists
        text = " ".join(_texts(prompt)) or prompt
        return json.dumps({"claims": _sentences(text)[:5] or [_first_words(text, 20)]})
    if stage.startswith("eval_"):  # the component metrics' yes/no judges
        return "Yes"
    return _first_words(prompt, 40)
