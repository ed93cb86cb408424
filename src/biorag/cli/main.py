"""The ``biorag`` command: index, retrieve, ask, demo, config, eval, kg, strata, serve."""

from __future__ import annotations

from pathlib import Path

import typer

from biorag.cli import (
    ask_cmd,
    config_cmd,
    demo_cmd,
    eval_cmd,
    index_cmd,
    kg_cmd,
    retrieve_cmd,
    serve_cmd,
    strata_cmd,
)
from biorag.cli.common import STATE
from biorag.util.progress import setup_logging

app = typer.Typer(
    help="Biomedical question answering grounded in the literature through knowledge graphs.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
)
app.add_typer(config_cmd.app, name="config")
app.add_typer(index_cmd.app, name="index")
app.command(name="retrieve")(retrieve_cmd.retrieve)
app.command(name="ask")(ask_cmd.ask)
app.command(name="demo")(demo_cmd.demo)
app.add_typer(eval_cmd.app, name="eval")
app.add_typer(kg_cmd.app, name="kg")
app.add_typer(strata_cmd.app, name="strata")
app.command(name="serve")(serve_cmd.serve)


@app.callback()
def main(
    config: Path = typer.Option(None, "--config", help="settings file (default ./biorag.toml)"),
    verbose: bool = typer.Option(False, "--verbose", "-v", help="log debug lines to stderr"),
) -> None:
    STATE.config = config
    STATE.verbose = verbose
    STATE._settings = None
    setup_logging(verbose)


if __name__ == "__main__":
    app()
