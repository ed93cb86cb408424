"""Keeping secrets out of everything biorag writes.

biorag reads API keys only from the environment variable named by ``api_key_env`` and sends
them in request headers. A server may still echo a key back in an error body, and a URL may
carry ``user:password@``: :func:`redact_request_secrets` removes what a request carried from
any text made of the server's reply, before it reaches an error, a log or a run directory.
"""

from __future__ import annotations

import base64
import binascii
import re
from collections.abc import Iterable, Sequence
from typing import Any
from urllib.parse import urlsplit, urlunsplit

REDACTED = "***"
#: Setting names that hold a secret; biorag has none, so such a key is refused unechoed.
SECRET_NAME = re.compile(r"(api[_-]?key|token|secret|passw(or)?d|credential)", re.IGNORECASE)
_MIN_SECRET = 4  # shorter strings would redact ordinary words
#: ``scheme://user:password@``, wherever it stands in a text (a URL inside a JSON value)
_URL_CREDENTIALS = re.compile(r"\b([a-z][a-z0-9+.-]*://)[^\s/@'\"]+@", re.IGNORECASE)


def looks_secret(name: str) -> bool:
    """Whether a setting or variable called ``name`` would hold a secret."""
    return bool(SECRET_NAME.search(name))


def mask_url(url: str) -> str:
    """``url`` with any ``user:password@`` part replaced by ``***@``."""
    parts = urlsplit(url)
    if parts.username or parts.password:
        host = parts.hostname or ""
        if parts.port:
            host += f":{parts.port}"
        return urlunsplit((parts.scheme, f"***@{host}", parts.path, parts.query, parts.fragment))
    return url


def mask_urls_in(text: str) -> str:
    """``text`` with the ``user:password@`` of every URL in it replaced by ``***@``."""
    return _URL_CREDENTIALS.sub(rf"\1{REDACTED}@", text)


def _secret_option(name: str) -> bool:
    """Whether an option or key called ``name`` holds a secret (``--api-key``, ``token``), not
    the name of a variable or file holding one (``api_key_env``, ``--api-keys-file``)."""
    lowered = name.lower().lstrip("-").replace("-", "_")
    return looks_secret(lowered) and not lowered.endswith(("_env", "_file", "_path"))


def _mask_json(value: Any, key: str = "") -> Any:
    if isinstance(value, dict):
        return {k: _mask_json(v, str(k)) for k, v in value.items()}
    if isinstance(value, list):
        return [_mask_json(v, key) for v in value]
    if isinstance(value, str):
        return REDACTED if _secret_option(key) else mask_urls_in(value)
    return value


def _mask_value(value: str, option: str = "") -> str:
    """One command-line value: masked whole after a secret option (a number stays: a count
    such as ``--max-tokens 512``), else its URLs' credentials and, where it is a JSON object
    (``--method-options``), the values of its secret-looking keys."""
    if option and _secret_option(option) and not re.fullmatch(r"[\d.]+", value):
        return REDACTED
    if value.lstrip().startswith(("{", "[")):
        import json

        try:
            parsed = json.loads(value)
        except ValueError:
            return mask_urls_in(value)
        masked = _mask_json(parsed)
        return value if masked == parsed else json.dumps(masked, separators=(",", ":"))
    return mask_urls_in(value)


def mask_argv(argv: Sequence[str]) -> list[str]:
    """A command line as it may be written down (``metrics.json``): any URL's
    ``user:password@`` masked, the value of an option whose name looks secret (``--api-key K``,
    ``--token=K``) and of a secret-looking key inside a JSON value (``--method-options
    '{"m": {"api_key": "K"}}'``) replaced by ``***``."""
    out: list[str] = []
    option = ""
    for arg in argv:
        if arg.startswith("--"):
            name, eq, value = arg.partition("=")
            out.append(f"{name}={_mask_value(value, name)}" if eq else arg)
            option = "" if eq else name
            continue
        out.append(_mask_value(arg, option))
        option = ""
    return out


def redact(text: str, secrets: Iterable[str]) -> str:
    """``text`` with every occurrence of each secret replaced by ``***``."""
    for secret in sorted({s for s in secrets if s and len(s) >= _MIN_SECRET}, key=len)[::-1]:
        text = text.replace(secret, REDACTED)
    return text


def request_secrets(request: Any) -> list[str]:
    """The credentials an ``httpx.Request`` carried: its bearer token or basic-auth password
    (and the whole ``user:password``), and the URL's password."""
    out: list[str] = []
    if request is None:
        return out
    auth = str(request.headers.get("authorization", ""))
    scheme, _, credential = auth.partition(" ")
    if credential:
        out.append(credential)
        if scheme.lower() == "basic":
            try:
                pair = base64.b64decode(credential, validate=True).decode("utf-8", "replace")
            except (binascii.Error, ValueError):
                pair = ""
            if pair:
                out += [pair, pair.partition(":")[2]]
    password = getattr(request.url, "password", None)
    if password:
        out.append(str(password))
    return out


def redact_request_secrets(text: str, message: Any) -> str:
    """``text`` (made from a server's reply) without the credentials that ``message``, an
    ``httpx.Response`` or ``httpx.Request``, carried."""
    import httpx

    request = message
    if isinstance(message, httpx.Response):
        try:
            request = message.request
        except RuntimeError:  # a response built without its request
            request = None
    return redact(text, request_secrets(request))
