"""Batch executors for embarrassingly parallel work (embedding a corpus, ...): local, in this
process (the default), or on a Ray cluster through Ray Data ``map_batches``
(``executor.kind = "ray"``, the ``ray`` extra). A worker is a class: built once per process or
Ray actor (a model loads once), then called on batches; results come back in input order."""

from biorag.executor.base import (
    BatchExecutor,
    LocalExecutor,
    build_executor,
    settings_for_workers,
)

__all__ = ["BatchExecutor", "LocalExecutor", "build_executor", "settings_for_workers"]
