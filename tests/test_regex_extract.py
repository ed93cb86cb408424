"""Regular-expression answer-letter extraction (VectorGraphRAG style, intended regexes)."""

from __future__ import annotations

import pytest

from biorag.answer.regex_extract import extract_letter_regex, parse_letters

OPTS = {"A": "Aspirin", "B": "Heparin", "C": "Warfarin", "D": "Clopidogrel"}
YNM = {"A": "yes", "B": "no", "C": "maybe"}


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # 1. the whole reply is a letter
        ("B", "B"),
        ("(b)", "B"),
        ("**C**", "C"),
        ("D.", "D"),
        # 2. JSON (the CLAIMS extraction format)
        ('{"answer": "b"}', "B"),
        ("Result: {'answer': '(c)'}", "C"),
        # 3. explicit statements (the branch VectorGraphRAG's `[aA]answer` typo disabled)
        ("The answer is (B).", "B"),
        ("Answer: C", "C"),
        ("... Answer is:B", "B"),
        ("the answer is d", "D"),
        ("After review the answer is: a", "A"),
        ("**Final Answer:** B", "B"),
        ("Final answer: **C. Warfarin**", "C"),
        ("The correct option is (D) because it is an antiplatelet.", "D"),
        ("Option C is the correct answer because it inhibits vitamin K.", "C"),
        ("I think (B) is right.", "B"),
        # distractors: the last explicit statement wins
        ("Not A, the answer is C.", "C"),
        ("A is incorrect. The answer is C", "C"),
        ("The answer is B. Wait, reconsidering, the final answer is D.", "D"),
        ("While option A is correct for adults, the best choice is B here.", "B"),
        # 4-6. weaker cues, unambiguous
        ("After considering everything, **B. Heparin** fits.", "B"),
        ("B. Heparin is the drug of choice in pregnancy.", "B"),
        ("Heparin (B) does not cross the placenta.", "B"),
        ('The answer to the question of whether heparin crosses is "B".', "B"),
        ("It has to be \u201cC\u201d here.", "C"),
    ],
)
def test_extract_letter(text: str, expected: str) -> None:
    assert extract_letter_regex(text, "ABCD") == expected


@pytest.mark.parametrize(
    "text",
    [
        "",
        "   ",
        "I do not know.",
        "The answer is a drug that thins the blood.",  # "a" is the article
        "The answer is not A.",  # a negation, and nothing else
        "Looking at the choices, (A) seems wrong but (C) fits.",  # conflicting cues
        "A. Aspirin\nB. Heparin\nC. Warfarin\nD. Clopidogrel",  # options listed back
        "**A** or **B**, hard to say.",
        'Either "A" or "B" could be argued.',  # quoted letters that disagree
        "The answer is E.",  # not a valid letter
    ],
)
def test_no_answer_gives_none(text: str) -> None:
    assert extract_letter_regex(text, "ABCD") is None


def test_none_input() -> None:
    assert extract_letter_regex(None) is None


def test_option_texts() -> None:
    # 3. a statement naming an option text
    assert extract_letter_regex("Answer: maybe", "ABC", YNM) == "C"
    assert extract_letter_regex("So the answer is No.", "ABC", YNM) == "B"
    # 7. exactly one option text in the reply
    assert extract_letter_regex("The drug of choice is heparin.", "ABCD", OPTS) == "B"
    assert extract_letter_regex("Aspirin or heparin could both work.", "ABCD", OPTS) is None
    # short option texts (< 4 characters) are not matched bare: "no" is everywhere
    assert extract_letter_regex("There is no clear evidence.", "ABC", YNM) is None
    # a shorter option inside a longer matched one does not count twice
    opts = {"A": "Aspirin", "B": "Aspirin and heparin"}
    assert extract_letter_regex("Give aspirin and heparin together.", "AB", opts) == "B"


def test_letters_forms_and_canonical_spelling() -> None:
    assert parse_letters("A-E") == ["A", "B", "C", "D", "E"]
    assert parse_letters("ABCD") == ["A", "B", "C", "D"]
    assert parse_letters(["a", "b"]) == ["a", "b"]
    with pytest.raises(ValueError):
        parse_letters(["AB"])
    assert extract_letter_regex("The answer is E", "A-E") == "E"
    assert extract_letter_regex("Answer: B", ["a", "b", "c", "d"]) == "b"
    assert extract_letter_regex("The answer is C", ["A", "B"]) is None
