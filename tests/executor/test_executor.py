"""The local executor and the choice of executor, without Ray."""

from __future__ import annotations

import builtins

import numpy as np
import pytest

from biorag.config import ExecutorSettings
from biorag.errors import BioragError
from biorag.executor import LocalExecutor, build_executor


class Doubler:
    def __init__(self, factor: int) -> None:
        self.factor = factor

    def __call__(self, batch: list[int]) -> np.ndarray:
        return np.asarray(batch) * self.factor


def test_local_batches_come_back_in_order_with_their_indexes():
    ex = build_executor(ExecutorSettings())
    assert isinstance(ex, LocalExecutor)
    got = list(ex.map_batches(Doubler, (2,), list(range(10)), 4))
    assert [idx for idx, _ in got] == [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9]]
    assert np.concatenate([out for _, out in got]).tolist() == [2 * i for i in range(10)]
    assert ex.stats()["workers"]["local"]["rows"] == 10


def test_ray_without_ray_installed_names_the_extra(monkeypatch):
    real_import = builtins.__import__

    def no_ray(name, *args, **kwargs):
        if name == "ray" or name.startswith("ray."):
            raise ImportError(name)
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_ray)
    with pytest.raises(BioragError) as info:
        build_executor(ExecutorSettings(kind="ray"))
    assert "biorag[ray]" in str(info.value)
