"""ASGI middleware for what every response carries and which hosts are served.

:class:`SecurityHeaders` adds, to every response: a Content-Security-Policy that allows scripts
from this server only (the page, /docs and /redoc load no inline script and nothing from
elsewhere), ``frame-ancestors 'none'`` with ``X-Frame-Options: DENY`` (no other site can frame
the page), ``X-Content-Type-Options: nosniff`` and ``Referrer-Policy: no-referrer``. /docs and
/redoc also allow inline styles (Swagger UI and ReDoc set them) and ReDoc its blob: worker.

:class:`AllowedHosts` refuses a request whose Host header is not served (DNS rebinding) with the
same JSON error every other refusal has.
"""

from __future__ import annotations

from typing import Any

CSP = (
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src 'self'; font-src 'self'; object-src 'none'; base-uri 'none'; "
    "form-action 'self'; frame-ancestors 'none'"
)
#: the API reference pages: their libraries set inline styles, and ReDoc runs a blob: worker
CSP_DOCS = CSP.replace("style-src 'self'", "style-src 'self' 'unsafe-inline'") + (
    "; worker-src 'self' blob:"
)
DOC_PAGES = ("/docs", "/redoc")
HEADERS = [
    (b"x-content-type-options", b"nosniff"),
    (b"x-frame-options", b"DENY"),
    (b"referrer-policy", b"no-referrer"),
]


class SecurityHeaders:
    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        csp = CSP_DOCS if scope.get("path") in DOC_PAGES else CSP

        async def with_headers(message: Any) -> None:
            if message["type"] == "http.response.start":
                have = {k.lower() for k, _ in message.get("headers", [])}
                extra = [(k, v) for k, v in HEADERS if k not in have]
                extra.append((b"content-security-policy", csp.encode()))
                message["headers"] = [*message.get("headers", []), *extra]
            await send(message)

        await self.app(scope, receive, with_headers)


class AllowedHosts:
    """Serves only the Host names listed (``*.example.org`` matches its subdomains)."""

    def __init__(self, app: Any, allowed_hosts: list[str]) -> None:
        self.app = app
        self.allowed = [h.lower() for h in allowed_hosts]

    def _ok(self, host: str) -> bool:
        name = host.rsplit(":", 1)[0] if not host.endswith("]") else host
        name = name.lower()
        return any(
            a == "*" or a == name or (a.startswith("*.") and name.endswith(a[1:]))
            for a in self.allowed
        )

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] in ("http", "websocket"):
            host = dict(scope["headers"]).get(b"host", b"").decode("latin-1")
            if not self._ok(host):
                from fastapi.responses import JSONResponse

                message = "this server does not answer for that Host header"
                body = {"error": {"type": "bad_host", "message": message}}
                await JSONResponse(body, status_code=400)(scope, receive, send)
                return
        await self.app(scope, receive, send)
