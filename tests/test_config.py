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


def test_judge_inherits_llm_and_overrides_from_environment():
    s = load_settings(
        environ={
            "BIORAG_LLM_BASE_URL": "http://127.0.0.1:8000/v1",
            "BIORAG_LLM_MODEL": "small-local",
            "BIORAG_JUDGE_MODEL": "big-judge",
            "BIORAG_JUDGE_TEMPERATURE": "0.2",
        }
    )
    j = s.judge_llm()
    assert s.judge.mode == "auto" and s.llm.model == "small-local"
    assert j.backend == "openai" and j.base_url == "http://127.0.0.1:8000/v1"
    assert j.model == "big-judge" and j.temperature == 0.2 and j.max_tokens == s.llm.max_tokens
    # no [judge] keys: the judge is the answering model
    assert load_settings(environ={}).judge_llm() == load_settings(environ={}).llm


def test_judge_endpoint_of_its_own_selects_openai(tmp_path: Path):
    cfg = tmp_path / "b.toml"
    cfg.write_text(
        '[llm]\nbackend = "mock"\nmock_script = "dry-run"\n'
        '[judge]\nmode = "on"\nbase_url = "https://judge.example/v1"\nmodel = "gpt-4o"\n'
        'api_key_env = "JUDGE_KEY"\n'
    )
    s = load_settings(cfg, environ={})
    j = s.judge_llm()
    assert (j.backend, j.model, j.api_key_env) == ("openai", "gpt-4o", "JUDGE_KEY")
    assert s.llm.backend == "mock" and s.judge.mode == "on"


def test_judge_errors_name_the_keys(tmp_path: Path):
    with pytest.raises(ConfigError, match=r"judge\.mode"):
        load_settings(environ={"BIORAG_JUDGE_MODE": "always"})
    with pytest.raises(ConfigError, match=r"judge\.modle: unknown key"):
        load_settings(environ={"BIORAG_JUDGE_MODLE": "x"})
    s = load_settings(environ={"BIORAG_JUDGE_BACKEND": "openai"})  # loads; judging would fail
    with pytest.raises(ConfigError, match=r"needs base_url and model.*BIORAG_JUDGE_BASE_URL"):
        s.judge_llm()


def test_config_show_has_the_judge_section_masked():
    s = load_settings(environ={"BIORAG_JUDGE_BASE_URL": "https://u:sekret@judge.example/v1"})
    shown = masked_dict(s)
    assert shown["judge"]["mode"] == "auto"
    assert shown["judge"]["base_url"] == "https://***@judge.example/v1"
    assert "sekret" not in str(shown)


def test_config_show_text_names_the_judge_model(monkeypatch, tmp_path: Path):
    import typer
    from typer.testing import CliRunner

    from biorag.cli import config_cmd
    from biorag.cli.common import STATE

    app = typer.Typer()

    @app.callback()
    def main() -> None:
        """The root command."""

    app.add_typer(config_cmd.app, name="config")

    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("BIORAG_LLM_BASE_URL", "https://u:sekret@llm.example/v1")
    monkeypatch.setenv("BIORAG_LLM_MODEL", "small")
    monkeypatch.setenv("BIORAG_JUDGE_MODEL", "big")
    STATE.config, STATE._settings = None, None
    try:
        res = CliRunner().invoke(app, ["config", "show"])
    finally:
        STATE._settings = None
    assert res.exit_code == 0, res.output
    assert "[judge]" in res.stdout and 'model = "big"' in res.stdout
    assert "# unset keys inherit from [llm]; judge: openai big at https://***@llm.example/v1" in (
        res.stdout
    )
    assert "sekret" not in res.stdout
    # the text is TOML that loads back to the same settings (unset keys are comments)
    import tomllib

    shown = tomllib.loads(res.stdout)
    assert shown["judge"]["model"] == "big" and "base_url" not in shown["judge"]
    assert "# base_url = (unset)" in res.stdout
    (tmp_path / "shown.toml").write_text(res.stdout.replace("***@", ""), encoding="utf-8")
    monkeypatch.delenv("BIORAG_LLM_BASE_URL")
    monkeypatch.delenv("BIORAG_LLM_MODEL")
    monkeypatch.delenv("BIORAG_JUDGE_MODEL")
    again = load_settings(tmp_path / "shown.toml")
    assert again.judge.model == "big" and again.llm.model == "small"


def test_masked_settings_mask_credentials_in_a_list_of_urls():
    from biorag.config import Settings, masked_dict

    s = Settings.model_validate(
        {"llm": {"backend": "openai", "model": "m",
                 "base_url": ["http://u:s3cret@a:1/v1", "http://b:2/v1"]}}
    )  # fmt: skip
    shown = masked_dict(s)["llm"]["base_url"]
    assert "s3cret" not in str(shown) and shown[1] == "http://b:2/v1"
