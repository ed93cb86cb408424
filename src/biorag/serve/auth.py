"""API keys: ``Authorization: Bearer KEY`` on every API call once any key is configured."""

from __future__ import annotations

import hmac
import ipaddress
import os
from pathlib import Path

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

    def __init__(self, keys: frozenset[str]) -> None:
        self.keys = [k.encode() for k in keys]

    async def __call__(self, request: Request) -> None:
        if not self.keys:
            return
        scheme, _, token = request.headers.get("authorization", "").partition(" ")
        given = token.strip().encode()
        if scheme.lower() != "bearer" or not any(hmac.compare_digest(given, k) for k in self.keys):
            raise HTTPException(
                401,
                "an API key is required: Authorization: Bearer KEY",
                {"WWW-Authenticate": "Bearer"},
            )
