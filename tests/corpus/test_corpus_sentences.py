"""Sentence splitting: spans into the original text, biomedical abbreviations, speed."""

from __future__ import annotations

import time

import pytest

from biorag.corpus.sentences import sentence_texts, split_sentences

NO_SPLIT = [
    "Smith et al. reported a 2-fold increase in IL-6 levels.",
    "The effect was significant (p < .05) and the OR was 0.05 in both arms.",
    "We grew E. coli and S. aureus strains overnight.",
    "See Fig. 2 and Figs. 3-4 for details.",
    "Drugs, i.e. statins, e.g. atorvastatin, were used.",
    "Approx. 5 patients vs. 10 controls died, ca. 30% of cases.",
    "Dr. Smith and Prof. Jones et al. (2019) showed it.",
    "The dose was approx. 3 mg/kg in the U.S. trial.",
    "Values (No. 5, Eq. 3, Ref. 12) were stable.",
]


@pytest.mark.parametrize("sentence", NO_SPLIT)
def test_abbreviations_do_not_split(sentence: str) -> None:
    text = f"{sentence} Next sentence follows."
    assert sentence_texts(text) == [sentence, "Next sentence follows."]


def test_splits_real_boundaries() -> None:
    text = (
        "Levels of NO. The effect was large! Was it real? Yes. It lasted 20 ms. Serum Ca. "
        "mRNA levels rose. p53 was high. α-Synuclein aggregated. (Data not shown.) "
        "In 2019. 25 patients."
    )
    assert sentence_texts(text) == [
        "Levels of NO.",
        "The effect was large!",
        "Was it real?",
        "Yes.",
        "It lasted 20 ms.",
        "Serum Ca.",
        "mRNA levels rose.",
        "p53 was high.",
        "α-Synuclein aggregated.",
        "(Data not shown.)",
        "In 2019.",
        "25 patients.",
    ]


def test_glued_section_labels_and_blocks() -> None:
    text = "Known methods (ADT-G).AIM: The aim was x.\n\n# Heading\nLine one\nwrapped.\n- item"
    assert sentence_texts(text) == [
        "Known methods (ADT-G).",
        "AIM: The aim was x.",
        "# Heading",
        "Line one\nwrapped.",
        "- item",
    ]


@pytest.mark.parametrize("method", ["regex", "pysbd"])
def test_span_invariants(method: str) -> None:
    text = "  First one.  Second, with 0.05 mg.\n\nThird?  Fourth!  Same. Same. Same.  "
    spans = split_sentences(text, method)  # type: ignore[arg-type]
    assert spans
    prev_end = 0
    for s, e in spans:
        assert prev_end <= s < e <= len(text)
        assert not text[s].isspace() and not text[e - 1].isspace()
        prev_end = e
    covered = "".join(text[s:e] for s, e in spans)
    assert "".join(covered.split()) == "".join(text.split())
    assert [text[s:e] for s, e in spans][-3:] == ["Same.", "Same.", "Same."]


def test_empty_and_unknown_method() -> None:
    assert split_sentences("") == []
    assert split_sentences(" \n\t ") == []
    with pytest.raises(ValueError, match="unknown sentence splitter"):
        split_sentences("x", "nltk")  # type: ignore[arg-type]


def test_regex_splitter_is_fast() -> None:
    text = " ".join(
        f"Sentence number {i} reports p < 0.05 in E. coli (Fig. 2)." for i in range(5000)
    )
    t = time.perf_counter()
    spans = split_sentences(text)
    elapsed = time.perf_counter() - t
    assert len(spans) == 5000
    assert elapsed / len(spans) < 1e-3  # well under 1 ms per sentence (about 5 us in practice)
