"""API keys: ``Authorization: Bearer KEY`` on every API call once any key is configured."""

from __future__ import annotations

import hashlib
import hmac
import ipaddress
import math
import os
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from fastapi import HTTPException, Request

from biorag.errors import BioragError

KEYS_ENV = "BIORAG_SERVER_API_KEYS"


def load_keys(
    keys_file: Path | None = None, environ: dict[str, str] | None = None
) -> frozenset[str]:
    """The keys of ``BIORAG_SERVER_API_KEYS`` (comma-separated) and of ``keys_file`` (one per
    line, ``#`` comments), never echoed anywhere."""
    env = os.environ if environ is None else environ
    keys = {k.strip() for k in env.get(KEYS_ENV, "").split(",") if k.strip()}
    if keys_file is not None:
        try:
            lines = Path(keys_file).read_text(encoding="utf-8").splitlines()
        except OSError as e:
            raise BioragError(f"cannot read the API keys file {keys_file}: {e.strerror}") from None
        keys |= {ln.strip() for ln in lines if ln.strip() and not ln.lstrip().startswith("#")}
    return frozenset(keys)


def is_loopback(host: str) -> bool:
    """Whether ``host`` is this machine only (127.0.0.0/8, ::1, localhost)."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def check_exposure(host: str, keys: frozenset[str]) -> None:
    """Refuse to listen beyond this machine without API keys."""
    if not keys and not is_loopback(host):
        raise BioragError(
            f"serving on {host} would let anyone on the network use this server: set API keys "
            f"({KEYS_ENV}=key1,key2 or a keys file), or serve on 127.0.0.1",
            param="host",
        )


class KeyCheck:
    """The dependency that guards the API: with keys configured, a request without one of them
    as its bearer token is a 401."""

    def __init__(self, keys: frozenset[str], rate_limit: RateLimit | None = None) -> None:
        self.keys = [k.encode() for k in keys]
        self.rate_limit = rate_limit

    async def __call__(self, request: Request) -> None:
        if not self.keys:
            self._limit(request.client.host if request.client else "?")
            return
        scheme, _, token = request.headers.get("authorization", "").partition(" ")
        given = token.strip().encode()
        if scheme.lower() != "bearer" or not any(hmac.compare_digest(given, k) for k in self.keys):
            self._limit("refused:" + (request.client.host if request.client else "?"))
            raise HTTPException(
                401,
                "an API key is required: Authorization: Bearer KEY",
                {"WWW-Authenticate": "Bearer"},
            )
        self._limit(hashlib.sha256(given).hexdigest()[:16])  # keys are not kept as such

    def _limit(self, who: str) -> None:
        if self.rate_limit is not None:
            self.rate_limit.check(who)


class RateLimit:
    """At most ``per_minute`` API calls a minute for each key (each client address when the
    server has no keys), as a token bucket: a burst of ``per_minute`` calls, then one call per
    ``60 / per_minute`` seconds; over it, 429 with ``Retry-After``. ``per_minute`` 0: no limit."""

    def __init__(self, per_minute: int, clock: Any = None) -> None:
        import time

        self.per_minute = per_minute
        self.clock = clock or time.monotonic
        self._buckets: dict[str, tuple[float, float]] = {}  # who -> (tokens, when)

    def check(self, who: str) -> None:
        if self.per_minute <= 0:
            return
        now, rate = self.clock(), self.per_minute / 60.0
        tokens, then = self._buckets.get(who, (float(self.per_minute), now))
        tokens = min(float(self.per_minute), tokens + (now - then) * rate)
        if tokens < 1.0:
            self._buckets[who] = (tokens, now)
            wait = max(1, math.ceil((1.0 - tokens) / rate))
            raise HTTPException(
                429,
                f"over the limit of {self.per_minute} API calls a minute for this key; "
                f"retry in {wait} s",
                {"Retry-After": str(wait)},
            )
        self._buckets[who] = (tokens - 1.0, now)
        if len(self._buckets) > 100_000:  # forget the oldest callers, not memory
            for stale in sorted(self._buckets, key=lambda k: self._buckets[k][1])[:50_000]:
                del self._buckets[stale]


class SameOrigin:
    """ASGI middleware: a request that changes something (POST, PUT, PATCH, DELETE) sent by a
    browser from a page of another origin is refused (403). A web page elsewhere could
    otherwise post a form (an upload) to a server on this machine that has no keys: browsers
    send such forms without asking first. Clients that are not browsers send no ``Origin``."""

    UNSAFE = frozenset({"POST", "PUT", "PATCH", "DELETE"})

    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http" and scope["method"] in self.UNSAFE:
            headers = dict(scope["headers"])
            origin = headers.get(b"origin", b"").decode("latin-1")
            host = headers.get(b"host", b"").decode("latin-1")
            if origin and (origin == "null" or urlsplit(origin).netloc != host):
                from fastapi.responses import JSONResponse

                message = "a request from another site's page is refused"
                body = {"error": {"type": "forbidden", "message": message}}
                await JSONResponse(body, status_code=403)(scope, receive, send)
                return
        await self.app(scope, receive, send)
