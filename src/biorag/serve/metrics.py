"""Prometheus metrics of one ``biorag serve`` (``GET /metrics``, text exposition format):
requests by route and status, their latency, asks by method and outcome, the asks in flight
and waiting,
LLM calls, cache hits and tokens, and jobs by status.

Each app has a registry of its own (several apps in one process, as in tests, do not share
counts). Routes are labelled by their template (``/v1/jobs/{job_id}``), never by the path a
client sent, so the number of series stays bounded.
"""

from __future__ import annotations

from typing import Any

from prometheus_client import CONTENT_TYPE_LATEST as CONTENT_TYPE  # noqa: F401 - re-exported
from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest

_LATENCY_BUCKETS = (0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300)


class Metrics:
    """The service's counters, with one method per thing it records."""

    def __init__(self) -> None:
        self.registry = r = CollectorRegistry()
        self.requests = Counter("biorag_http_requests", "HTTP requests answered",
                                ["method", "route", "status"], registry=r)  # fmt: skip
        self.latency = Histogram("biorag_http_request_seconds", "HTTP request latency",
                                 ["route"], buckets=_LATENCY_BUCKETS, registry=r)  # fmt: skip
        self.asks = Counter("biorag_asks", "asks answered, by method and outcome",
                            ["method", "outcome"], registry=r)  # fmt: skip
        self.in_flight = Gauge("biorag_asks_in_flight", "asks being answered", registry=r)
        self.queued = Gauge("biorag_asks_queued", "asks waiting for a slot", registry=r)
        self.slots_busy = Gauge("biorag_ask_slots_busy", "ask slots taken", registry=r)
        self.llm_calls = Counter("biorag_llm_calls", "LLM calls made by asks", registry=r)
        self.llm_cache_hits = Counter("biorag_llm_cache_hits", "LLM calls answered by the cache",
                                      registry=r)  # fmt: skip
        self.llm_tokens = Counter("biorag_llm_tokens", "LLM tokens of asks", ["kind"], registry=r)
        self.jobs = Gauge("biorag_jobs", "document jobs by status", ["status"], registry=r)

    def request(self, method: str, route: str, status: int, seconds: float) -> None:
        self.requests.labels(method, route, str(status)).inc()
        self.latency.labels(route).observe(seconds)

    def ask(self, method: str, outcome: str, accounting: dict[str, Any] | None) -> None:
        self.asks.labels(method, outcome).inc()
        total = (accounting or {}).get("total") or {}
        self.llm_calls.inc(total.get("calls", 0))
        self.llm_cache_hits.inc(total.get("cache_hits", 0))
        self.llm_tokens.labels("prompt").inc(total.get("prompt_tokens", 0))
        self.llm_tokens.labels("completion").inc(total.get("completion_tokens", 0))

    def exposition(self, jobs: list[dict[str, Any]], queued: int = 0, busy: int = 0) -> bytes:
        """The text format, with the jobs gauge set from ``jobs`` and the queue's and slots'
        from ``queued`` and ``busy`` now."""
        self.queued.set(queued)
        self.slots_busy.set(busy)
        for status in ("queued", "running", "done", "failed"):
            self.jobs.labels(status).set(sum(j["status"] == status for j in jobs))
        return generate_latest(self.registry)
