"""Per-stage counts of LLM use: calls, cache hits, tokens, latency, failures.

One :class:`Accounting` lives as long as the composed client (``llm.accounting``); commands
print ``llm.accounting.format_report()`` at the end and put ``llm.accounting.report()`` under
``accounting`` in their JSON output. ``with llm.accounting.run(): ...`` also records the
wall-clock time of the whole run. Reports from several processes combine with :meth:`merge`.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, fields
from typing import Any


@dataclass
class StageStats:
    """Counters of one stage.

    ``calls`` counts answered requests (cache hits included); tokens count only new tokens
    (hits add none); ``latency_s`` sums backend latency; ``attempt_errors`` counts failed
    backend attempts (retried or not); ``failures`` counts requests that failed for good;
    ``parse_failures`` counts JSON requests whose answer could not be parsed;
    ``repetition_cuts`` counts answers whose degenerate loop was cut off
    (:mod:`biorag.llm.repetition`), ``loops_stopped`` those of them whose stream was closed at
    the loop's onset, so the server stopped generating (:mod:`biorag.llm.openai.streaming`);
    ``fallbacks`` counts items an operator handed to its
    no-LLM floor (or answered some other lesser way) because the model's answer was unusable
    or its request failed.
    """

    calls: int = 0
    cache_hits: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    latency_s: float = 0.0
    attempt_errors: int = 0
    failures: int = 0
    parse_failures: int = 0
    repetition_cuts: int = 0
    loops_stopped: int = 0
    fallbacks: int = 0

    def add(self, other: StageStats) -> None:
        for f in fields(self):
            setattr(self, f.name, getattr(self, f.name) + getattr(other, f.name))


class Accounting:
    """Thread-safe per-stage counters for one run."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._stages: dict[str, StageStats] = {}
        self.wall_s: float = 0.0

    def _stage(self, stage: str) -> StageStats:
        return self._stages.setdefault(stage, StageStats())

    def record_call(
        self,
        stage: str,
        prompt_tokens: int,
        completion_tokens: int,
        latency_s: float,
        parse_failed: bool = False,
        repetition_cut: bool = False,
        loop_stopped: bool = False,
    ) -> None:
        """A request answered by the backend (``repetition_cut``: its answer looped and was
        cut; ``loop_stopped``: its stream was closed when the loop began)."""
        with self._lock:
            s = self._stage(stage)
            s.calls += 1
            s.prompt_tokens += prompt_tokens
            s.completion_tokens += completion_tokens
            s.latency_s += latency_s
            s.parse_failures += int(parse_failed)
            s.repetition_cuts += int(repetition_cut)
            s.loops_stopped += int(loop_stopped)

    def record_fallback(self, stage: str, n: int = 1) -> None:
        """``n`` items of ``stage`` went down the operator's fallback path."""
        if n:
            with self._lock:
                self._stage(stage).fallbacks += n

    def record_cache_hit(self, stage: str, parse_failed: bool = False) -> None:
        """A request answered from the cache (no new tokens)."""
        with self._lock:
            s = self._stage(stage)
            s.calls += 1
            s.cache_hits += 1
            s.parse_failures += int(parse_failed)

    def record_attempt_error(self, stage: str) -> None:
        """A backend attempt that raised (it may still be retried)."""
        with self._lock:
            self._stage(stage).attempt_errors += 1

    def record_failure(self, stage: str) -> None:
        """A request that failed for good (raised to the caller)."""
        with self._lock:
            self._stage(stage).failures += 1

    def stage(self, stage: str) -> StageStats:
        """A copy of one stage's counters (zeros for an unseen stage)."""
        with self._lock:
            return StageStats(**asdict(self._stages.get(stage, StageStats())))

    def total(self) -> StageStats:
        """All stages summed."""
        out = StageStats()
        with self._lock:
            for s in self._stages.values():
                out.add(s)
        return out

    def report(self) -> dict[str, Any]:
        """``{"stages": {name: counters}, "total": counters, "wall_s": seconds}``."""
        with self._lock:
            stages = {k: _rounded(asdict(v)) for k, v in sorted(self._stages.items())}
        return {"stages": stages, "total": _rounded(asdict(self.total())), "wall_s": self.wall_s}

    def merge(self, other: Accounting | dict[str, Any]) -> Accounting:
        """Add another accounting (or its :meth:`report`) into this one; returns self."""
        report = other.report() if isinstance(other, Accounting) else other
        names = {f.name for f in fields(StageStats)}
        with self._lock:
            for stage, counters in report.get("stages", {}).items():
                self._stage(stage).add(
                    StageStats(**{k: v for k, v in counters.items() if k in names})
                )
            self.wall_s += float(report.get("wall_s") or 0.0)
        return self

    def reset(self) -> None:
        """Forget all counters."""
        with self._lock:
            self._stages.clear()
            self.wall_s = 0.0

    @contextmanager
    def run(self) -> Iterator[Accounting]:
        """Context for a whole run: adds its wall-clock time to ``wall_s``."""
        start = time.perf_counter()
        try:
            yield self
        finally:
            with self._lock:
                self.wall_s += time.perf_counter() - start

    def format_report(self) -> str:
        """A small text table, one line per stage and a total line (``loops``: answers cut back
        from a degenerate repetition)."""
        rep = self.report()
        cols = ("calls", "hits", "prompt", "compl", "lat_s", "fail", "parse", "loops", "fallb")
        widths = (6, 6, 9, 8, 8, 5, 5, 5, 5)
        lines = [
            f"{'stage':<20} " + " ".join(f"{c:>{w}}" for c, w in zip(cols, widths, strict=True))
        ]
        rows = [*rep["stages"].items(), ("TOTAL", rep["total"])]
        for name, c in rows:
            lines.append(
                f"{name[:20]:<20} {c['calls']:>6} {c['cache_hits']:>6} {c['prompt_tokens']:>9} "
                f"{c['completion_tokens']:>8} {c['latency_s']:>8.2f} {c['failures']:>5} "
                f"{c.get('parse_failures', 0):>5} {c.get('repetition_cuts', 0):>5} "
                f"{c.get('fallbacks', 0):>5}"
            )
        return "\n".join(lines)

    def __repr__(self) -> str:
        t = self.total()
        return f"Accounting(stages={len(self._stages)}, calls={t.calls}, hits={t.cache_hits})"


def _rounded(d: dict[str, Any]) -> dict[str, Any]:
    return {k: round(v, 4) if isinstance(v, float) else v for k, v in d.items()}


def note_fallback(llm: object, stage: str, n: int = 1) -> None:
    """Count ``n`` fallbacks of ``stage`` in ``llm``'s accounting (nothing without an LLM).

    ``llm`` is a :class:`~biorag.llm.base.ChatModel` or None; typed ``object`` because
    ``base`` imports this module (naming ChatModel here would be an import cycle)."""
    acc = getattr(llm, "accounting", None)
    if isinstance(acc, Accounting):
        acc.record_fallback(stage, n)
