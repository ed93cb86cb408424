from pathlib import Path

import pytest

from biorag.config import load_settings, masked_dict
from biorag.errors import ConfigError


def test_defaults_run_without_llm():
    s = load_settings(environ={})
    assert s.llm.backend == "none"
    assert s.retrieval.rrf_k == 60
    assert s.chunking.chunk_tokens == 1000 and s.chunking.overlap_tokens == 200


def test_file_then_environment_override(tmp_path: Path):
    cfg = tmp_path / "b.toml"
    cfg.write_text('[retrieval]\nk = 7\nretriever = "bm25"\n[llm]\ntemperature = 0.3\n')
    s = load_settings(cfg, environ={"BIORAG_RETRIEVAL_K": "12"})
    assert s.retrieval.k == 12
    assert s.retrieval.retriever == "bm25"
    assert s.llm.temperature == 0.3


def test_endpoint_from_environment_selects_openai():
    s = load_settings(
        environ={"BIORAG_LLM_BASE_URL": "http://127.0.0.1:8000/v1", "BIORAG_LLM_MODEL": "m"}
    )
    assert s.llm.backend == "openai"


def test_invalid_value_names_key_and_allowed(tmp_path: Path):
    cfg = tmp_path / "b.toml"
    cfg.write_text('[retrieval]\nretriever = "magic"\n')
    with pytest.raises(ConfigError) as e:
        load_settings(cfg, environ={})
    assert "retrieval.retriever" in str(e.value)
    assert "'bm25', 'dense' or 'hybrid'" in str(e.value)


def test_unknown_key_and_bad_toml(tmp_path: Path):
    cfg = tmp_path / "b.toml"
    cfg.write_text("[embed]\nmodle = 'x'\n")
    with pytest.raises(ConfigError, match=r"embed\.modle: unknown key"):
        load_settings(cfg, environ={})
    cfg.write_text("[embed\n")
    with pytest.raises(ConfigError, match="not valid TOML"):
        load_settings(cfg, environ={})
    with pytest.raises(ConfigError, match="does not exist"):
        load_settings(tmp_path / "missing.toml", environ={})


def test_openai_backend_requires_endpoint():
    with pytest.raises(ConfigError, match="needs base_url and model"):
        load_settings(environ={"BIORAG_LLM_BACKEND": "openai"})


def test_overlap_must_be_below_chunk_size():
    with pytest.raises(ConfigError, match="overlap_tokens"):
        load_settings(environ={"BIORAG_CHUNKING_OVERLAP_TOKENS": "2000"})


def test_masking_hides_credentials():
    s = load_settings(
        environ={
            "BIORAG_LLM_BASE_URL": "https://user:sekret@example.org/v1",
            "BIORAG_LLM_MODEL": "m",
        }
    )
    shown = masked_dict(s)
    assert "sekret" not in str(shown)
    assert shown["llm"]["api_key_env"] == "OPENAI_API_KEY"
