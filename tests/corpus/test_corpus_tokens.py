"""TokenCounter: the real all-MiniLM-L6-v2 WordPiece tokenizer, offline, no truncation."""

from __future__ import annotations

from biorag.corpus.tokens import TokenCounter, default_counter, default_tokenizer_path


def test_counts_without_truncation_or_special_tokens(counter: TokenCounter) -> None:
    assert counter.count("") == 0
    assert counter.count("hello world") == 2
    long = "word " * 1000
    assert counter.count(long) == 1000  # the tokenizer.json truncates at 128 unless disabled
    assert counter.count_many(["hello world", long, ""]) == [2, 1000, 0]


def test_offsets_point_into_text(counter: TokenCounter) -> None:
    text = "Naïve β-cells produce IL-6."
    offsets = counter.offsets(text)
    assert len(offsets) == counter.count(text)
    assert [text[s:e] for s, e in offsets][:3] == ["Naïve", "β", "-"]


def test_default_counter_is_cached_and_other_paths_load() -> None:
    assert default_counter() is default_counter()
    path = default_tokenizer_path()
    by_file = TokenCounter(path)
    by_dir = TokenCounter(path.parent)
    text = "Metformin lowers hepatic glucose output."
    assert by_file.count(text) == by_dir.count(text) == default_counter().count(text)
    copy = TokenCounter(default_counter().tokenizer)
    assert copy.count("word " * 300) == 300
