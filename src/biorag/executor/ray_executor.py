"""Batches on a Ray cluster: Ray Data ``map_batches`` over an actor pool, one actor per CPU the
cluster offers (or ``executor.ray_workers``), each building its worker once.

Items travel as rows ``{"i": index, "item": value}``; an actor returns ``{"i", "out", "actor",
"secs"}`` per batch, so results are matched to their items by index whatever order Ray hands
them back in (``preserve_order`` is also set), and every actor's rows and busy seconds are
counted (:meth:`RayExecutor.stats`). The driver consumes results as a stream, so a caller that
commits each batch (the index's embedding does) resumes after a kill where it stopped.
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np

from biorag.config import ExecutorSettings
from biorag.errors import BioragError

log = logging.getLogger(__name__)


def _import_ray() -> Any:
    # Ray would otherwise re-run workers through `uv run` when the driver was started by uv,
    # and ask about usage statistics.
    os.environ.setdefault("RAY_ENABLE_UV_RUN_RUNTIME_ENV", "0")
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    try:
        import ray
    except ImportError:
        raise BioragError(
            "executor.kind = 'ray' needs Ray: pip install 'biorag[ray]' (ray[data]), or use "
            "executor.kind = 'local'",
            param="executor.kind",
        ) from None
    return ray


def _probe(address: str | None) -> None:
    """Fail fast, naming the setting, when nothing listens at a ``host:port`` address (Ray
    itself retries for minutes)."""
    if not address or address == "auto" or "://" in address or ":" not in address:
        return
    import socket

    host, _, port = address.rpartition(":")
    try:
        with socket.create_connection((host, int(port)), timeout=5):
            pass
    except (OSError, ValueError) as e:
        raise BioragError(
            f"cannot reach the Ray cluster at {address!r} ({e}); start the Ray head node "
            "there, or fix executor.ray_address",
            param="executor.ray_address",
        ) from None


class _Actor:
    """The Ray Data UDF: builds the worker once per actor, runs it on each batch."""

    def __init__(self, worker_cls: type, args: Any):
        import ray

        if isinstance(args, ray.ObjectRef):  # put once by the driver (a vocabulary, say)
            args = ray.get(args)
        self.worker = worker_cls(*args)
        self.name = f"{ray.get_runtime_context().get_node_id()[:8]}/pid{os.getpid()}"

    def __call__(self, batch: dict[str, np.ndarray]) -> dict[str, Any]:
        t = time.perf_counter()
        out = self.worker(list(batch["item"]))
        secs = time.perf_counter() - t
        n = len(batch["i"])
        return {
            "i": np.asarray(batch["i"]),
            "out": out if isinstance(out, np.ndarray) else np.asarray(out, dtype=object),
            "actor": np.full(n, self.name, dtype=object),
            "secs": np.full(n, secs / max(n, 1)),
        }


class RayExecutor:
    """Runs batches on the Ray cluster at ``executor.ray_address`` (or a local one Ray starts
    in this process when none is given)."""

    kind = "ray"

    def __init__(self, settings: ExecutorSettings):
        ray = _import_ray()
        self.settings = settings
        address = settings.ray_address
        _probe(address)
        self._owns_ray = not ray.is_initialized()
        try:
            ray.init(
                address=address,
                log_to_driver=False,
                ignore_reinit_error=True,
                include_dashboard=False,
                **({} if address else {"num_cpus": settings.ray_workers or None}),
            )
        except (ConnectionError, RuntimeError, ValueError) as e:
            raise BioragError(
                f"cannot reach the Ray cluster at {address!r} ({' '.join(str(e).split())[:200]});"
                " start the Ray head node there, or fix executor.ray_address",
                param="executor.ray_address",
            ) from None
        cpus = int(ray.cluster_resources().get("CPU", 0))
        if cpus < 1:
            self.close()
            raise BioragError(
                f"the Ray cluster at {address!r} offers no CPU (no worker node has joined?); "
                "start worker nodes, or fix executor.ray_address",
                param="executor.ray_address",
            )
        self.workers = settings.ray_workers or cpus
        self._stats: dict[str, dict[str, float]] = {}
        log.info("Ray cluster: %d CPUs, %d workers", cpus, self.workers)

    def map_batches(
        self, worker_cls: type, args: tuple[Any, ...], items: Sequence[Any], batch_size: int
    ) -> Iterator[tuple[list[int], Any]]:
        import ray

        if not items:
            return
        ctx = ray.data.DataContext.get_current()
        ctx.execution_options.preserve_order = True
        ctx.enable_progress_bars = False
        # every actor of the pool is up before the first batch is sent: otherwise the first one
        # ready may take all the batches of a small, fast job while the others still start
        ctx.wait_for_min_actors_s = 120
        blocks = max(1, -(-len(items) // batch_size))  # one block per batch: committed alone
        ds = ray.data.from_items(
            [{"i": i, "item": x} for i, x in enumerate(items)], override_num_blocks=blocks
        )
        out = ds.map_batches(
            _Actor,
            fn_constructor_args=(worker_cls, ray.put(args)),  # stored once, not per actor
            compute=ray.data.ActorPoolStrategy(size=self.workers),
            num_cpus=1,
            batch_size=batch_size,
            batch_format="numpy",
        )
        batches: Iterator[Any] = iter(out.iter_batches(batch_size=None, batch_format="numpy"))
        while True:
            try:
                b = next(batches)
            except StopIteration:
                return
            except ray.exceptions.RayError as e:
                cause = " ".join(str(e).split())[-300:]
                raise BioragError(
                    f"a Ray worker failed ({type(e).__name__}: ...{cause}); check that every "
                    "node has biorag and its models installed, and executor.ray_address",
                    param="executor.ray_address",
                ) from None
            if len(b["out"]) != len(b["i"]):
                raise BioragError(
                    f"a Ray worker returned {len(b['out'])} results for {len(b['i'])} items"
                )
            for actor, secs in zip(b["actor"], b["secs"], strict=True):
                st = self._stats.setdefault(str(actor), {"rows": 0, "s": 0.0})
                st["rows"] += 1
                st["s"] += float(secs)
            yield [int(i) for i in b["i"]], b["out"]

    def stats(self) -> dict[str, Any]:
        """Rows and busy seconds per actor (node id prefix / process id)."""
        return {"kind": self.kind, "workers": self._stats}

    def close(self) -> None:
        """Disconnect (and stop a Ray this executor started); a Ray the caller had already
        started is left running."""
        import ray

        if self._owns_ray:
            ray.shutdown()
