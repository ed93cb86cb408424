"""Document-level facts of a paper: research methods, datasets and domains.

With an LLM (stage ``strata_doc``) the answer is JSON ``{"methods": [...], "datasets": [...],
"domains": [...]}``. Without one, patterns: study designs and assays ("randomized controlled
trial", "cohort", "meta-analysis", "RNA-seq", ...), dataset names (capitalized tokens next to
"dataset", "cohort", "database", "biobank", "registry"), domains from the keywords and topic
cues ("cancer" -> oncology, ...). :class:`NameMatcher` then joins names to existing records by
embedding similarity (cosine > 0.5, or the same lower-cased name), else starts a new record.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

import numpy as np

from biorag.embed.base import Embedder
from biorag.errors import LLMError
from biorag.llm import budget
from biorag.llm.base import ChatModel
from biorag.llm.evidence import format_passage
from biorag.llm.prompts import PromptTemplate
from biorag.strata import dry_replies as _dry_replies  # noqa: F401 - registers its dry-run answers

DOC_PROMPT = PromptTemplate.load("biorag.strata.prompts", "strata_doc")
DOC_SCHEMA = {
    "type": "object",
    "properties": {
        k: {"type": "array", "items": {"type": "string"}}
        for k in ("methods", "datasets", "domains")
    },
    "required": ["methods", "datasets", "domains"],
}

METHOD_PATTERNS = [
    (r"randomi[sz]ed(?:,? (?:double-blind|placebo-controlled|controlled))* (?:clinical )?trial",
     "randomized controlled trial"),
    (r"meta-analys[ie]s", "meta-analysis"),
    (r"systematic review", "systematic review"),
    (r"\bcohort stud(?:y|ies)|\b(?:prospective|retrospective) cohort", "cohort study"),
    (r"case-control", "case-control study"),
    (r"cross-sectional", "cross-sectional study"),
    (r"\bRNA-seq\b|RNA sequencing", "RNA-seq"),
    (r"single-cell", "single-cell sequencing"),
    (r"genome-wide association|\bGWAS\b", "genome-wide association study"),
    (r"whole[- ](?:exome|genome) sequencing", "whole-genome/exome sequencing"),
    (r"mendelian randomi[sz]ation", "Mendelian randomization"),
    (r"machine learning|deep learning|neural network", "machine learning"),
    (r"\bmouse model|\bmice\b|\bmurine\b", "mouse model"),
    (r"\bin vitro\b|cell lines?", "in vitro assay"),
    (r"western blot", "western blot"),
    (r"\bqPCR\b|RT-PCR", "qPCR"),
    (r"immunohistochemistry", "immunohistochemistry"),
    (r"molecular docking", "molecular docking"),
]  # fmt: skip
_METHODS = [(re.compile(p, re.I), name) for p, name in METHOD_PATTERNS]

DOMAIN_CUES = [
    (r"cancer|tumou?r|carcinoma|oncolog|leukemia|lymphoma|melanoma", "oncology"),
    (r"cardi|heart|coronary|hypertension|atherosclero", "cardiology"),
    (r"diabet|insulin|obesity|metabolic", "endocrinology and metabolism"),
    (r"alzheimer|parkinson|neuro|dementia|brain", "neurology"),
    (r"infect|viral|virus|bacteri|covid|sars-cov", "infectious disease"),
    (r"immun|inflamm|arthritis|autoimmun", "immunology"),
    (r"genom|transcriptom|sequencing|gene expression", "genomics"),
    (r"drug repurpos|pharmacolog|drug discovery", "pharmacology"),
]
_DOMAINS = [(re.compile(p, re.I), name) for p, name in DOMAIN_CUES]

_CAP = r"[A-Z][A-Za-z0-9\-]*(?:\s+[A-Z0-9][A-Za-z0-9\-]*){0,3}"
_DATASET_BEFORE = re.compile(
    rf"\b(?:the\s+)?({_CAP})\s+(?:dataset|cohort|database|biobank|registry)\b"
)
_DATASET_AFTER = re.compile(
    rf"\b(?:dataset|database|cohort|biobank)s?\s+(?:from\s+|of\s+)?({_CAP})"
)
_DATASET_STOP = {"the", "this", "a", "our", "we", "in", "prospective", "retrospective", "large"}


@dataclass
class DocInfo:
    methods: list[str] = field(default_factory=list)
    datasets: list[str] = field(default_factory=list)
    domains: list[str] = field(default_factory=list)
    source: str = "pattern"  # llm | pattern


def _strs(v: object) -> list[str]:
    items = v if isinstance(v, list) else []
    return list(dict.fromkeys(s.strip() for s in items if isinstance(s, str) and s.strip()))


def extract_doc_llm(
    llm: ChatModel, title: str, abstract: str, keywords: list[str] | None = None, pid: str = "paper"
) -> DocInfo:
    """Methods/datasets/domains from the LLM (stage ``strata_doc``; the paper is one passage
    block with id ``pid``); LLMError on failure."""
    kw = ", ".join(keywords or []) or "-"
    req = DOC_PROMPT.request(
        {"paper": format_passage(pid, f"Title: {title}\nKeywords: {kw}\nAbstract: {abstract}")},
        stage="strata_doc",
        json_schema=DOC_SCHEMA,
        max_tokens=budget.DOC_FACTS,
    )
    resp = llm.run_sync(llm.chat_json(req))
    if not isinstance(resp.parsed, dict):
        raise LLMError(f"strata_doc answer is not a JSON object: {resp.parse_error}")
    p = resp.parsed
    return DocInfo(
        _strs(p.get("methods")), _strs(p.get("datasets")), _strs(p.get("domains")), "llm"
    )


def extract_doc_rules(title: str, abstract: str, keywords: list[str] | None = None) -> DocInfo:
    """The no-LLM patterns (a floor: only the listed designs, assays and topic cues)."""
    text = f"{title}. {abstract}"
    methods = [name for rx, name in _METHODS if rx.search(text)]
    datasets: list[str] = []
    for rx in (_DATASET_BEFORE, _DATASET_AFTER):
        for m in rx.finditer(text):
            words = m.group(1).split()
            while words and words[0].lower() in _DATASET_STOP:
                words = words[1:]
            if words and not (len(words) == 1 and words[0].lower() in _DATASET_STOP):
                datasets.append(" ".join(words))
    domains = [k.strip().lower() for k in keywords or [] if k.strip()]
    domains += [name for rx, name in _DOMAINS if rx.search(text)]
    return DocInfo(methods, list(dict.fromkeys(datasets)), list(dict.fromkeys(domains)))


class NameMatcher:
    """Joins a name to an existing record of its kind when cosine > ``threshold`` (0.5)."""

    def __init__(self, embedder: Embedder | None, threshold: float = 0.5) -> None:
        self.embedder = embedder
        self.threshold = threshold
        self._names: dict[str, list[str]] = {}
        self._vecs: dict[str, list[np.ndarray]] = {}

    def canonical(self, kind: str, name: str) -> str:
        """The record name ``name`` joins (itself when it starts a new record)."""
        name = " ".join(name.split())
        names = self._names.setdefault(kind, [])
        vecs = self._vecs.setdefault(kind, [])
        for n in names:
            if n.lower() == name.lower():
                return n
        vec = self.embedder.embed_query(name) if self.embedder is not None else None
        if vec is not None and vecs:
            sims = np.stack(vecs) @ vec
            best = int(np.argmax(sims))
            if float(sims[best]) > self.threshold:
                return names[best]
        names.append(name)
        if vec is not None:
            vecs.append(vec)
        return name
