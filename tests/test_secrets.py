"""Secrets never appear in what biorag prints: settings errors, settings dumps, server echoes."""

from __future__ import annotations

import httpx
import pytest

from biorag.config import ConfigError, Settings, load_settings, masked_dict
from biorag.util.secrets import looks_secret, mask_url, redact, redact_request_secrets

CANARY = "sk-canary-7f3a9c2e5b"


def test_a_key_in_the_settings_file_is_refused_without_being_echoed(tmp_path):
    cfg = tmp_path / "biorag.toml"
    cfg.write_text(f'[llm]\nbackend = "openai"\napi_key = "{CANARY}"\n')
    with pytest.raises(ConfigError) as info:
        load_settings(cfg, environ={})
    text = str(info.value)
    assert CANARY not in text
    assert "llm.api_key" in text and "llm.api_key_env" in text and "OPENAI_API_KEY" in text


def test_a_key_in_a_biorag_variable_is_refused_without_being_echoed():
    with pytest.raises(ConfigError) as info:
        load_settings(None, environ={"BIORAG_LLM_API_KEY": CANARY, "BIORAG_EMBED_TOKEN": CANARY})
    text = str(info.value)
    assert CANARY not in text and "llm.api_key" in text and "embed.token" in text


def test_unknown_keys_show_no_value_and_name_the_nearest_key(tmp_path):
    with pytest.raises(ConfigError) as info:
        load_settings(None, environ={"BIORAG_LLM_BASEURL": f"http://u:{CANARY}@h:8080/v1"})
    text = str(info.value)
    assert "llm.baseurl: unknown key" in text and "did you mean llm.base_url?" in text
    assert CANARY not in text and "h:8080" not in text  # no value at all, masked or not


@pytest.mark.parametrize("where", ["toml", "environment"])
def test_a_mistyped_secret_key_beside_a_secret_prints_nothing_of_it(tmp_path, where):
    """``api_kee = "<the key>"`` is no secret key by its name: it must not be echoed either."""
    cfg = tmp_path / "biorag.toml"
    environ: dict[str, str] = {}
    if where == "toml":
        cfg.write_text(f'[llm]\nbackend = "openai"\napi_kee = "{CANARY}"\n')
    else:
        cfg.write_text("")
        environ = {"BIORAG_LLM_API_KEE": CANARY}
    with pytest.raises(ConfigError) as info:
        load_settings(cfg, environ=environ)
    text = str(info.value)
    assert CANARY not in text and CANARY[3:12] not in text
    assert "llm.api_kee: unknown key" in text and "did you mean llm.api_key_env?" in text


def test_a_bad_value_is_named_by_its_key_without_the_value():
    with pytest.raises(ConfigError) as info:
        load_settings(None, environ={"BIORAG_RETRIEVAL_K": "ten-sk-canary"})
    text = str(info.value)
    assert "retrieval.k:" in text and "integer" in text and "ten-sk-canary" not in text


def test_settings_dumps_mask_url_credentials():
    s = Settings(llm={"backend": "openai", "base_url": f"http://u:{CANARY}@h/v1", "model": "m"})
    assert CANARY not in repr(masked_dict(s))


def test_redaction_helpers():
    assert looks_secret("api_key") and looks_secret("HF_TOKEN") and not looks_secret("model")
    assert redact(f"a {CANARY} b {CANARY}", [CANARY, "", "ab"]) == "a *** b ***"
    assert mask_url(f"https://me:{CANARY}@host/v1") == "https://***@host/v1"
    request = httpx.Request(
        "POST", f"http://me:{CANARY}x@h/v1", headers={"Authorization": f"Bearer {CANARY}"}
    )
    reply = httpx.Response(401, request=request, text=f"bad key {CANARY} or {CANARY}x")
    assert redact_request_secrets(reply.text, reply) == "bad key *** or ***"
    assert redact_request_secrets("plain", httpx.Response(500, text="x")) == "plain"
