"""Typed entity mentions without a vocabulary: word shapes, a floor below a trained tagger.

When ``strata build`` has neither a MeSH nor a UniProt file, the no-LLM entity level still needs
mentions. :class:`ShapeMatcher` (the same ``find`` as the vocabulary matcher) types a word or
phrase by its shape alone:

* Drug: a known drug or a word with an International Nonproprietary Name stem (``-mab``,
  ``-tinib``, ``-statin``, ``-pril``, ...: :func:`biorag.extract.entities.is_drug_word`);
* Gene: an upper-case gene-like token (``TP53``, ``BRCA1``, ``HER2``:
  :func:`biorag.extract.entities.is_gene_like`), except common clinical abbreviations;
* Protein: one to three words ending in ``protein``, ``receptor``, ``kinase``, ``factor`` or an
  enzyme word in ``-ase``;
* Disease: one to three words ending in a disease head of :mod:`biorag.extract.lexicon`
  (``cancer``, ``disease``, ``diabetes``, an ``-itis``, ``-oma``, ``-emia``, ``-osis`` word...).

Entities found this way are not normalized (their key is the lower-cased name): the report says
so. It misses what a vocabulary or an LLM would find and takes some words it should not; it is
there so that a collection without vocabulary files still gets an entity level.
"""

from __future__ import annotations

import re

from biorag.extract.entities import is_drug_word, is_gene_like
from biorag.extract.lexicon import DISEASE_SUFFIXES, DISEASE_WORDS

_TOKEN = re.compile(r"[A-Za-z0-9][A-Za-z0-9-]*")
_NOT_GENES = frozenset(
    """AIDS BMI CI CT DNA ECG EEG ELISA FDA HIV HR ICU IQR MRI NA NIH NS OR PCR PET RCT RNA RR SD
    SE SEM UK US USA WHO CD ED ER OK MD ICD DSM CBT COPD ADHD ARDS CKD CAD ASD MS PD AD AF MI HF
    TB UTI BP COVID SARS ROC AUC LDL HDL RNAs DNAs""".split()
)
_WORDS = r"(?:[A-Za-z0-9][A-Za-z0-9'-]*\s+){0,2}"
_PROTEIN = re.compile(
    r"\b" + _WORDS + r"(?:protein|receptor|kinase|factor|[a-z]{3,}ase)s?\b", re.IGNORECASE
)
# the lexicon's disease words and endings that head a disease name (not "pain", "death", or a
# procedure in -ectomy)
_NOT_DISEASE_HEADS = {"mortality", "death", "pain", "injury", "inflammation", "ectomy"}
_DISEASE_HEADS = "|".join(
    [re.escape(w) + "s?" for w in sorted(DISEASE_WORDS - _NOT_DISEASE_HEADS)]
    + [r"[a-z]{3,}" + e for e in DISEASE_SUFFIXES if e not in _NOT_DISEASE_HEADS]
)
_DISEASE = re.compile(r"\b" + _WORDS + r"(?:" + _DISEASE_HEADS + r")\b", re.IGNORECASE)
_LEADING = re.compile(
    r"^(?:(?:the|a|an|of|in|with|and|or|for|to|by|on|at|from|as|is|was|were|are|be|this|that|"
    r"these|those|its|their|our|patients?|subjects?|cases?|risk|all|any|no|not|both|each|"
    r"than|more|less|after|before|during|between|among|into|we|it|which|who|whose|had|has|"
    r"have|been|such|other|most|many|some|\d+)\s+)+",
    re.IGNORECASE,
)
_NOT_HEADS = {
    "Protein": frozenset(
        "base case release increase decrease phase disease database purchase phrase lease "
        "erase".split()
    ),
    "Disease": frozenset(
        "diagnosis prognosis academia diploma aroma empathy sympathy telepathy".split()
    ),
}
#: heads too general to name an entity on their own ("the disease", "a tumour")
_GENERIC_HEADS = frozenset(
    """cancer carcinoma tumor tumour disease syndrome disorder infection failure deficiency
    fibrillation infarction protein receptor kinase factor""".split()
)
_VERB_LIKE = re.compile(r"^[a-z]+(?:[^su's]s|ed|ing)$")


def _trim(phrase: str) -> str:
    """``phrase`` without leading function words, and without leading verb-like words
    ("treats Breast Cancer" -> "Breast Cancer")."""
    words = _LEADING.sub("", phrase).split()
    while len(words) > 1 and _VERB_LIKE.match(words[0]):
        words = words[1:]
    return " ".join(words)


def _head(surface: str) -> str:
    word = surface.split()[-1].lower()
    return word[:-1] if word.endswith("s") and not word.endswith(("ss", "is", "us")) else word


def _keep(surface: str, type_: str) -> bool:
    head = _head(surface)
    if head in _NOT_HEADS[type_] or surface.split()[-1].lower() in _NOT_HEADS[type_]:
        return False
    return len(surface.split()) > 1 or head not in _GENERIC_HEADS


class ShapeMatcher:
    """``find(text)`` -> ``(surface, type, start, end)`` of non-overlapping shape-typed mentions,
    the longer mention first where two overlap."""

    def find(self, text: str) -> list[tuple[str, str, int, int]]:
        found: list[tuple[str, str, int, int]] = []
        for pattern, type_ in ((_DISEASE, "Disease"), (_PROTEIN, "Protein")):
            for m in pattern.finditer(text):
                surface = _trim(m.group())
                if surface and _keep(surface, type_) and text.endswith(surface, 0, m.end()):
                    found.append((surface, type_, m.end() - len(surface), m.end()))
        for m in _TOKEN.finditer(text):
            word = m.group()
            if is_drug_word(word):
                found.append((word, "Drug", m.start(), m.end()))
            elif word not in _NOT_GENES and word.isupper() and is_gene_like(word):
                found.append((word, "Gene", m.start(), m.end()))
        found.sort(key=lambda f: (f[2], -(f[3] - f[2])))
        out: list[tuple[str, str, int, int]] = []
        end = -1
        for f in found:
            if f[2] >= end:
                out.append(f)
                end = f[3]
        return out


#: Where to get the vocabularies, for messages.
VOCABULARY_SOURCES = (
    "MeSH descriptors (--mesh desc20XX.xml: https://www.nlm.nih.gov/databases/download/mesh.html, "
    "free under the NLM terms and conditions) and UniProt (--uniprot: a TSV export with Entry, "
    "Protein names and Gene Names from https://www.uniprot.org, CC BY 4.0)"
)


def entity_source(vocabulary_entries: int, with_llm: bool) -> str:
    """How a build finds and normalizes entity mentions, for its report."""
    if vocabulary_entries:
        how = "the LLM" if with_llm else "the vocabulary's names and synonyms"
        return f"found by {how}, normalized against {vocabulary_entries} vocabulary entries"
    how = "the LLM" if with_llm else "word shapes (drug-name stems, gene symbols, disease heads)"
    return f"found by {how}; not normalized (no vocabulary): keys are lower-cased names"
