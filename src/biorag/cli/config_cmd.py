"""``biorag config show``."""

from __future__ import annotations

import json

import typer

from biorag.cli.common import STATE, emit_json, handle_errors
from biorag.config import Settings, masked_dict
from biorag.errors import ConfigError

app = typer.Typer(help="Inspect the effective settings.", no_args_is_help=True)


@app.command()
@handle_errors
def show(as_json: bool = typer.Option(False, "--json")) -> None:
    """Print the effective settings (file + BIORAG_* variables), secrets masked.

    The text is valid TOML: an unset key is printed as a comment (``# key = (unset)``).
    """
    settings = STATE.settings()
    data = masked_dict(settings)
    if as_json:
        emit_json(data)
        return
    for key, value in data.items():
        if isinstance(value, dict):
            typer.echo(f"[{key}]")
            if key == "judge":
                typer.echo(f"# unset keys inherit from [llm]; {_judge_summary(settings)}")
            for k, v in value.items():
                typer.echo(f"# {k} = (unset)" if v is None else f"{k} = {json.dumps(v)}")
            typer.echo("")
        else:
            typer.echo(f"{key} = {json.dumps(value)}")


def _judge_summary(settings: Settings) -> str:
    """The judge model the settings give, in one comment line (or why they give none)."""
    try:
        cfg = settings.judge_llm()
    except ConfigError as e:
        return f"the judge settings are invalid: {e}"
    if cfg.backend == "none":
        return "no judge model (its backend is none: set judge.backend or judge.base_url)"
    name = cfg.model or cfg.hf_path or cfg.mock_script or "?"
    if cfg.backend == "openai":
        shown = masked_dict(settings.model_copy(update={"llm": cfg}))["llm"]
        name += f" at {shown['base_url']}"
    return f"judge: {cfg.backend} {name}"
