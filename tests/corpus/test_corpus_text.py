"""clean_text: CLAIMS-style removal of special characters before extraction."""

from __future__ import annotations

from biorag.corpus.text import clean_text, normalize_whitespace


def test_keeps_scientific_text_and_drops_odd_symbols() -> None:
    raw = "IL-6\u200b levels ↑ 20 %\u00a0(p\u00a0<\u00a00.05) 😀 at 37 °C, 5 µg ± 0.2 \x07"
    assert clean_text(raw) == "IL-6 levels ↑ 20 % (p < 0.05) at 37 °C, 5 μg ± 0.2"


def test_keeps_any_script_greek_and_punctuation() -> None:
    raw = "TNF-α and β-catenin; «Zürich» — 中文, naïve [1]: x/y = 3 × 4 ≤ 5‰?"
    assert clean_text(raw) == raw


def test_nfkc_and_control_characters() -> None:
    assert clean_text("ﬁbrosis H₂O ½") == "fibrosis H2O 1⁄2"
    assert clean_text("a\x00b\x1bc\ue000d\ufffde") == "abc d e"


def test_whitespace_normalized() -> None:
    assert clean_text("  a \t b\r\n\r\n\r\n\r\nc  \n d ") == "a b\n\nc\nd"
    assert clean_text("a\n\nb  c", keep_newlines=False) == "a b c"
    assert normalize_whitespace(" x \n\n\n y ") == "x\n\ny"
    assert clean_text("") == ""
