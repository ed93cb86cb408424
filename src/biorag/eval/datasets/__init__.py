"""Benchmark dataset loaders: each reads local files into :class:`QAItem` records."""

from biorag.eval.datasets.base import QAItem

__all__ = ["QAItem"]
