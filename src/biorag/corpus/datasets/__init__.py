"""Benchmark dataset loaders: each reads local files into :class:`QAItem` records.

``load_dataset(name, path, split=, setting=, limit=, **options)`` dispatches to one module per
dataset (see each module's docstring for its input, ``split`` and ``setting``). Nothing is
downloaded. A file of the wrong shape raises :class:`~biorag.errors.InputFormatError` naming
the file, what was expected and the fix; a malformed record is skipped and reported in
``DatasetLoad.skipped``; ``limit`` keeps the first N items after filtering, in file order.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from pathlib import Path
from typing import Any

from biorag.corpus.datasets import (
    bioasq,
    biocdqa,
    mashqa,
    medmcqa,
    medqa,
    mirage,
    mmlu,
    pubmedqa,
)
from biorag.corpus.datasets.base import QAItem, QuestionType
from biorag.corpus.datasets.common import DatasetLoad, PathArg
from biorag.errors import ConfigError

LOADERS: dict[str, Callable[..., DatasetLoad]] = {
    "pubmedqa": pubmedqa.load,
    "mirage": mirage.load,
    "medqa": medqa.load,
    "mmlu": mmlu.load,
    "medmcqa": medmcqa.load,
    "bioasq": bioasq.load,
    "mashqa": mashqa.load,
    "biocdqa": biocdqa.load,
}
#: The dataset names :func:`load_dataset` accepts.
DATASETS: tuple[str, ...] = tuple(LOADERS)


def canonical_name(name: str) -> str:
    """``"MASH-QA"`` -> ``"mashqa"``; :class:`ConfigError` for an unknown dataset."""
    key = name.strip().lower().replace("-", "").replace("_", "")
    if key not in LOADERS:
        raise ConfigError(f"unknown dataset {name!r}; use one of: {', '.join(DATASETS)}")
    return key


def load_dataset(
    name: str,
    path: PathArg,
    *,
    split: str | None = None,
    setting: str | None = None,
    limit: int | None = None,
    **options: Any,
) -> DatasetLoad:
    """Load benchmark ``name`` from local ``path``.

    ``options`` go to the dataset's loader: ``ground_truth`` (pubmedqa), ``single_only`` and
    ``cop_base`` (medmcqa). An option the loader does not take is a :class:`ConfigError`.
    """
    key = canonical_name(name)
    loader = LOADERS[key]
    if not isinstance(path, str | Path) and key != "bioasq":
        raise ConfigError(f"{key}: pass one file or folder, not a list of paths")
    accepted = set(inspect.signature(loader).parameters) - {"path", "split", "setting", "limit"}
    unknown = sorted(set(options) - accepted)
    if unknown:
        takes = ", ".join(sorted(accepted)) or "none"
        raise ConfigError(f"{key}: unknown option(s) {', '.join(unknown)}; it takes: {takes}")
    return loader(path, split=split, setting=setting, limit=limit, **options)


__all__ = ["DATASETS", "DatasetLoad", "QAItem", "QuestionType", "canonical_name", "load_dataset"]
