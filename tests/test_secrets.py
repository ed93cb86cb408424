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


def test_other_unknown_keys_still_show_their_value_with_url_credentials_masked(tmp_path):
    with pytest.raises(ConfigError) as info:
        load_settings(None, environ={"BIORAG_LLM_BASEURL": f"http://u:{CANARY}@h:8080/v1"})
    text = str(info.value)
    assert "llm.baseurl: unknown key" in text and CANARY not in text and "***@h:8080" in text


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
