"""``biorag config show``."""

from __future__ import annotations

import json

import typer

from biorag.cli.common import STATE, emit_json, handle_errors

app = typer.Typer(help="Inspect the effective settings.", no_args_is_help=True)


@app.command()
@handle_errors
def show(as_json: bool = typer.Option(False, "--json")) -> None:
    """Print the effective settings (file + BIORAG_* variables), secrets masked."""
    from biorag.config import masked_dict

    data = masked_dict(STATE.settings())
    if as_json:
        emit_json(data)
        return
    for key, value in data.items():
        if isinstance(value, dict):
            typer.echo(f"[{key}]")
            for k, v in value.items():
                typer.echo(f"{k} = {json.dumps(v)}")
            typer.echo("")
        else:
            typer.echo(f"{key} = {json.dumps(value)}")
