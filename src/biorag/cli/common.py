"""What every command shares: settings, error reporting, JSON output, accounting."""

from __future__ import annotations

import functools
import json
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar

import typer

from biorag.config import Settings, load_settings
from biorag.errors import BioragError

F = TypeVar("F", bound=Callable[..., Any])


class State:
    config: Path | None = None
    verbose: bool = False
    _settings: Settings | None = None

    def settings(self) -> Settings:
        if self._settings is None:
            self._settings = load_settings(self.config)
        return self._settings


STATE = State()


def fail(message: str, code: int = 2) -> None:
    typer.echo(f"error: {message}", err=True)
    raise typer.Exit(code)


def handle_errors(fn: F) -> F:
    """Turn a user's mistake into one clear message on stderr (exit 2), never a traceback."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except BioragError as e:
            fail(str(e))
        except KeyboardInterrupt:
            typer.echo("interrupted; run the same command again to resume", err=True)
            raise typer.Exit(130) from None

    return wrapper  # type: ignore[return-value]


def emit_json(data: Any) -> None:
    sys.stdout.write(json.dumps(data, indent=2, ensure_ascii=False, default=str) + "\n")


def print_accounting(report: dict[str, Any]) -> None:
    """The LLM accounting table, on stderr, at the end of a command."""
    if not report:
        typer.echo("accounting: no LLM calls (no-LLM operators)", err=True)
        return
    stages = report.get("stages", report)
    typer.echo("accounting (LLM calls per stage):", err=True)
    for stage, row in stages.items():
        if not isinstance(row, dict):
            continue
        typer.echo(
            f"  {stage:<18} calls={row.get('calls', 0):<5} cached={row.get('cache_hits', 0):<5}"
            f" prompt_tokens={row.get('prompt_tokens', 0):<7}"
            f" completion_tokens={row.get('completion_tokens', 0):<7}"
            f" seconds={row.get('latency_s', 0.0):.2f}"
            + (f" loops_cut={row['repetition_cuts']}" if row.get("repetition_cuts") else ""),
            err=True,
        )


@contextmanager
def llm_session(llm: Any | None) -> Iterator[dict[str, Any]]:
    """Run a block with ``llm`` (None: no LLM); yields a dict that holds the LLM's accounting
    report once the block has finished, and closes the LLM however the block ends."""
    accounting: dict[str, Any] = {}
    try:
        yield accounting
        if llm is not None:
            accounting.update(llm.accounting.report())
    finally:
        if llm is not None:
            llm.close()


def parse_json_option(value: str | None, name: str) -> Any:
    if value is None:
        return None
    try:
        return json.loads(value)
    except json.JSONDecodeError as e:
        raise BioragError(
            f"{name} is not valid JSON ({e.msg} at column {e.colno}); "
            f"""example: {name} '{{"A": "yes", "B": "no"}}'"""
        ) from None
