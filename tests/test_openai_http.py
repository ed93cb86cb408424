"""The HTTP the chat backend and the embedder share (biorag.util.openai_http): one reading of
an error body in every server's shape, with the request's key removed before it is cut."""

from __future__ import annotations

import json

import httpx

from biorag.util.openai_http import Timeouts, api_base, api_root, bearer_headers, error_body

KEY = "sk-shared-secret-0123456789"


def _reply(status: int, body: object | str, key: str | None = None) -> httpx.Response:
    headers = {"Authorization": f"Bearer {key}"} if key else {}
    request = httpx.Request("POST", "http://h:8080/v1/embeddings", headers=headers)
    if isinstance(body, str):
        return httpx.Response(status, text=body, request=request)
    return httpx.Response(status, json=body, request=request)


def test_every_servers_error_shape_is_read() -> None:
    openai = {"error": {"message": "no such model", "type": "invalid_request_error"}}
    assert error_body(_reply(404, openai)) == ("no such model", openai["error"])
    assert error_body(_reply(404, {"error": "model not found"})) == ("model not found", {})
    assert error_body(_reply(422, {"detail": "bad input"}))[0] == "bad input"
    fastapi = {"detail": [{"loc": ["body", "input"], "msg": "field required"}]}
    assert json.loads(error_body(_reply(422, fastapi))[0]) == fastapi["detail"]
    assert error_body(_reply(500, {"error": {"code": 5}})) == ('{"code": 5}', {"code": 5})
    assert error_body(_reply(502, "  Bad gateway\n")) == ("Bad gateway", {})
    assert error_body(_reply(502, "")) == ("Bad Gateway", {})  # the reason phrase
    assert error_body(_reply(500, ["x"])) == ('["x"]', {})


def test_the_key_a_server_echoes_is_removed_before_the_message_is_cut() -> None:
    text = "x" * 290 + KEY  # the key straddles the 300 characters kept of a non-JSON body
    assert KEY[:6] not in error_body(_reply(401, text, key=KEY))[0]
    message = {"error": {"message": "y" * 490 + KEY}}
    assert KEY[:6] not in error_body(_reply(401, message, key=KEY))[0]


def test_key_header_timeouts_and_urls(monkeypatch) -> None:
    monkeypatch.setenv("SOME_KEY_VAR", KEY)
    monkeypatch.delenv("NO_KEY_VAR", raising=False)
    assert bearer_headers("SOME_KEY_VAR") == {"Authorization": f"Bearer {KEY}"}
    assert bearer_headers("NO_KEY_VAR") == {} and bearer_headers("") == {}
    t = Timeouts(30.0, 0.5, connect_s=2.0)
    assert t.read_s(None) == 30.0 and t.for_request(64) == httpx.Timeout(62.0, connect=2.0)
    assert api_base("http://h:8080/") == "http://h:8080/v1"
    assert api_base("https://x.com/openai/v1/") == "https://x.com/openai/v1"
    assert api_root("http://h:8080/v1/") == "http://h:8080"
