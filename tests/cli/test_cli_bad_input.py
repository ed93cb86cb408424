"""Bad input fails fast: one line on stderr naming the input or setting to fix, exit 2, no
traceback (the runner re-raises any exception) and nothing answered or cached."""

from __future__ import annotations

import json
import socket

import pytest

from biorag.cli.common import llm_session, one_line
from biorag.errors import BioragError, ConfigError, InputError, LLMError

OPTIONS = json.dumps({"A": "yes", "B": "no"})
MOCK = {"llm_backend": "mock", "llm_mock_script": "dry-run"}


def error_lines(result) -> list[str]:
    """The ``error:`` lines of a command's stderr."""
    return [line for line in result.stderr.splitlines() if line.startswith("error:")]


@pytest.mark.parametrize("question", ["", "   ", "\n\t "])
def test_an_empty_question_is_an_error_and_nothing_is_cached(cli, tmp_path, question):
    res = cli("ask", "--method", "closed-book", "--options", OPTIONS, question, **MOCK)
    assert res.exit_code == 2 and res.stdout == ""
    (line,) = error_lines(res)
    assert "the QUESTION argument is" in line and "biorag ask" in line
    assert not (tmp_path / "home" / "llm_cache.sqlite").exists()


def test_the_facade_refuses_an_empty_question(tmp_path):
    from biorag import BioRAG
    from biorag.config import Settings

    settings = Settings.model_validate({"home": str(tmp_path / "home"), **{"llm": {}}})
    with BioRAG(tmp_path / "idx", settings) as rag:
        with pytest.raises(InputError, match="question is only whitespace"):
            rag.ask("  ", options={"A": "yes", "B": "no"}, method="closed-book")
        with pytest.raises(BioragError, match="question is empty"):
            rag.ask("")


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _ask_openai(cli, base_url: str, model: str = "m"):
    return cli(
        "ask",
        "--method",
        "closed-book",
        "--options",
        OPTIONS,
        "Does aspirin reduce fever?",
        llm_backend="openai",
        llm_base_url=base_url,
        llm_model=model,
        llm_max_retries=0,
        llm_connect_timeout_s=2,
    )


def _one_error(res) -> str:
    assert res.exit_code == 2, res.output
    (line,) = error_lines(res)
    assert "Traceback" not in res.stderr and res.stdout == ""
    return line


def test_ask_with_the_llm_server_down(cli):
    line = _one_error(_ask_openai(cli, f"http://127.0.0.1:{_closed_port()}/v1"))
    assert "llm.base_url" in line


def test_ask_with_a_model_the_server_does_not_serve(cli, fake_openai):
    body = {
        "error": {
            "message": "The model `nope` does not exist.",
            "type": "invalid_request_error",
            "code": "model_not_found",
        }
    }
    fake_openai.default = lambda _: (404, {}, body, 0.0)
    line = _one_error(_ask_openai(cli, fake_openai.url, model="nope"))
    assert "llm.model" in line


def test_ask_with_base_url_pointing_at_a_web_page(cli, fake_openai):
    page = b"<!DOCTYPE html>\n<html><head><title>Router</title></head>\n<body>Login</body></html>"
    fake_openai.default = lambda _: (200, {}, page, 0.0)
    line = _one_error(_ask_openai(cli, fake_openai.url))
    assert "llm.base_url" in line and "<html" not in line


def test_kg_and_strata_build_report_llm_errors_as_one_line(cli, tmp_path, monkeypatch):
    """An LLMError that reaches the command (the builds fall back per item on most of them)
    is one line, exit 2."""

    def down(*args, **kwargs):
        raise LLMError("openai model 'm' failed: cannot connect to llm.base_url http://x\n(down)")

    papers = tmp_path / "papers.jsonl"
    papers.write_text(json.dumps({"pid": "P1", "title": "t", "abstract": "a"}) + "\n")
    monkeypatch.setattr("biorag.strata.build_strata", down)
    line = _one_error(cli("strata", "build", "--papers", str(papers), "--out", "kg"))
    assert line == "error: openai model 'm' failed: cannot connect to llm.base_url http://x (down)"
    monkeypatch.setattr("biorag.cli.kg_cmd.build_kg", down)
    res = cli("kg", "build", "--from", str(papers), "--format", "jsonl", "--out", "kg2")
    assert "llm.base_url" in _one_error(res)


def test_one_line_collapses_server_pages_but_keeps_config_lists():
    e = LLMError(
        "llm.base_url http://h answered HTTP 501: <!DOCTYPE HTML>\n<html><body>\n"
        "<h1>Error response</h1></body></html>"
    )
    assert one_line(e) == "llm.base_url http://h answered HTTP 501: Error response"
    assert len(one_line(BioragError("x" * 5000))) == 600
    multi = ConfigError("invalid settings (biorag.toml):\n  llm.model: bad\nFix the key")
    assert one_line(multi) == str(multi)


def test_llm_session_times_the_whole_block(tmp_path):
    import time

    from biorag.config import Settings
    from biorag.llm import build_llm
    from biorag.llm.types import ChatRequest

    with llm_session(None) as acc:
        time.sleep(0.02)
    assert acc["stages"] == {} and acc["total"]["calls"] == 0 and acc["wall_s"] >= 0.02
    settings = Settings.model_validate(
        {"home": str(tmp_path / "home"), "llm": {"backend": "mock", "mock_script": "dry-run"}}
    )
    llm = build_llm(settings)
    with llm_session(llm) as acc:
        llm.chat_sync(ChatRequest(messages=[{"role": "user", "content": "hi"}], stage="s1"))
        time.sleep(0.02)
    assert acc["stages"]["s1"]["calls"] == 1 and acc["wall_s"] >= 0.02


def test_library_errors_say_no_flags_and_the_cli_names_the_option():
    """The library speaks of its arguments; the command line adds the option that sets one."""
    import typer

    from biorag.cli.common import command_options, option_for

    def cmd(
        files: list[str] = typer.Argument(...),
        fmt: str = typer.Option("auto", "--format"),
        neo4j_uri: str = typer.Option(None, "--neo4j-uri"),
        allow_overlap: bool = typer.Option(False, "--allow-overlap"),
        exclude_overlap: bool = typer.Option(False, "--exclude-overlap"),
        out: str = typer.Option(...),
    ) -> None: ...

    opts = command_options(cmd)
    assert option_for("format", opts) == ["--format"]
    assert option_for("neo4j_uri", opts) == ["--neo4j-uri"]
    assert option_for("out", opts) == ["--out"]
    assert option_for("files", opts) == ["FILES"]
    assert option_for("overlap", opts) == ["--allow-overlap", "--exclude-overlap"]
    assert option_for("kg", opts) == []


def test_no_library_error_names_a_command_line_flag():
    """What is raised outside biorag.cli speaks of the library's arguments (the CLI adds the
    flag): no string in a raise statement, or in a format_error call, names a --flag."""
    import ast
    import re
    from pathlib import Path

    src = Path(__file__).resolve().parents[2] / "src" / "biorag"
    flag = re.compile(r"(^|[\s(`])--[a-z][a-z-]+")
    others = ("pip install", "llama-server", "--embeddings", "--pooling", "--chat-template",
              "biorag serve --")  # fmt: skip
    found = []
    for p in src.rglob("*.py"):
        if "cli" in p.relative_to(src).parts:
            continue
        for node in ast.walk(ast.parse(p.read_text(encoding="utf-8"))):
            called = isinstance(node, ast.Call) and getattr(node.func, "id", "") == "format_error"
            if not (isinstance(node, ast.Raise) or called):
                continue
            for c in ast.walk(node):
                text = c.value if isinstance(c, ast.Constant) else None
                if (
                    isinstance(text, str)
                    and flag.search(text)
                    and not any(o in text for o in others)
                ):
                    found.append(f"{p.relative_to(src)}:{c.lineno}: {text}")
    assert found == []
