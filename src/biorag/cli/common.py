"""What every command shares: settings, error reporting, JSON output, accounting."""

from __future__ import annotations

import errno
import functools
import json
import re
import sqlite3
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import typer

from biorag.config import Settings, load_settings
from biorag.errors import BioragError, ConfigError
from biorag.executor import build_executor
from biorag.llm.accounting import Accounting
from biorag.llm.factory import LLM
from biorag.runtime import Runtime

if TYPE_CHECKING:
    from biorag.runtime import Runtime

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


MAX_ERROR_CHARS = 600
_TAG = re.compile(r"<[^<>]{0,300}>")


def one_line(error: BaseException) -> str:
    """``error``'s message on one line: whitespace runs collapsed, the tags of an HTML page a
    server answered with dropped, cut at :data:`MAX_ERROR_CHARS`. A :class:`ConfigError` keeps
    its lines (one per invalid key, by design)."""
    text = str(error)
    if isinstance(error, ConfigError):
        return text
    if re.search(r"<(!doctype|html|head|body|title)\b", text, re.IGNORECASE):
        text = _TAG.sub(" ", text)
    text = " ".join(text.split())
    return text if len(text) <= MAX_ERROR_CHARS else text[: MAX_ERROR_CHARS - 3] + "..."


_FULL = (errno.ENOSPC, errno.EDQUOT)
_READ_ONLY = (errno.EROFS, errno.EACCES, errno.EPERM)


def storage_problem(e: BaseException) -> str | None:
    """One line for a full disk or a directory biorag may not write to; None for other errors.
    Files are written atomically (a temporary file renamed over the old one, SQLite
    transactions), so what was there before stays usable."""
    text = " ".join(str(e).split())
    if (
        (isinstance(e, OSError) and e.errno in _FULL)
        or "disk is full" in text
        or "disk I/O" in text
    ):
        filename = getattr(e, "filename", None)
        where = f" writing {filename}" if filename else ""
        return (
            f"the disk is full or failing{where} ({text}); free some space and run the same "
            "command again: what was written before is unchanged"
        )
    if (isinstance(e, OSError) and e.errno in _READ_ONLY) or "readonly database" in text:
        filename = getattr(e, "filename", None)
        where = f" {filename}" if filename else ""
        return (
            f"cannot write{where} ({text}): the output directory is read-only; write to "
            "another directory or make it writable"
        )
    return None


def command_options(fn: Callable[..., Any]) -> dict[str, list[str]]:
    """A command function's parameters and how its command line names them: ``{"out":
    ["--out"], "fmt": ["--format"], "files": ["FILES"]}`` (read from its typer defaults)."""
    import inspect

    from typer.models import ArgumentInfo, OptionInfo

    names: dict[str, list[str]] = {}
    for name, p in inspect.signature(fn).parameters.items():
        info = p.default
        if isinstance(info, OptionInfo):
            decls = [d.split("/")[0] for d in info.param_decls or ()]  # --flag/--no-flag
            flags = [d for d in decls if d.startswith("--")]
            names[name] = flags[:1] or ["--" + name.replace("_", "-")]
        elif isinstance(info, ArgumentInfo):
            names[name] = [name.upper()]
    return names


def option_for(param: str, options: dict[str, list[str]]) -> list[str]:
    """How a command line names the library argument ``param``: the option (or argument) named
    so (``out``: ``--out``; ``neo4j_uri``: ``--neo4j-uri``; ``format``: ``--format``), else the
    options whose flag holds the word (``overlap``: ``--allow-overlap``, ``--exclude-overlap``)."""
    flag = "--" + param.replace("_", "-")
    for name, shown in options.items():
        if name == param or flag in shown:
            return shown
    return [f for shown in options.values() for f in shown if param in f.split("-")]


def _option_named(param: str | None, command: Callable[..., Any]) -> str:
    names = option_for(param, command_options(command)) if param else []
    if not names:
        return ""
    return f" ({'options' if len(names) > 1 else 'option'} {', '.join(names)})"


def handle_errors(fn: F) -> F:
    """Turn a user's mistake into one clear message on stderr (exit 2), never a traceback."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except BioragError as e:  # the command's options are read only when one is named
            fail(one_line(e) + _option_named(e.param, fn))
        except (OSError, sqlite3.OperationalError) as e:
            why = storage_problem(e)
            if why is None:
                raise
            fail(why)
        except KeyboardInterrupt:
            typer.echo("interrupted; run the same command again to resume", err=True)
            raise typer.Exit(130) from None

    return wrapper  # type: ignore[return-value]


def emit_json(data: Any) -> None:
    sys.stdout.write(json.dumps(data, indent=2, ensure_ascii=False, default=str) + "\n")


def print_accounting(report: dict[str, Any]) -> None:
    """The LLM accounting table and the command's wall time, on stderr, at the end of a
    command."""
    wall = report.get("wall_s")
    took = f" in {wall:.2f} s" if isinstance(wall, int | float) else ""
    stages = report.get("stages", report)
    if not report or not any(isinstance(row, dict) for row in stages.values()):
        typer.echo(f"accounting: no LLM calls (no-LLM operators){took}", err=True)
        return
    typer.echo("accounting (LLM calls per stage):", err=True)
    for stage, row in stages.items():
        if not isinstance(row, dict):
            continue
        typer.echo(
            f"  {stage:<18} calls={row.get('calls', 0):<5} cached={row.get('cache_hits', 0):<5}"
            f" prompt_tokens={row.get('prompt_tokens', 0):<7}"
            f" completion_tokens={row.get('completion_tokens', 0):<7}"
            f" seconds={row.get('latency_s', 0.0):.2f}"
            + (f" loops_cut={row['repetition_cuts']}" if row.get("repetition_cuts") else "")
            + (f" (stopped early: {row['loops_stopped']})" if row.get("loops_stopped") else ""),
            err=True,
        )
    total = report.get("total")
    if isinstance(total, dict) and took:
        typer.echo(
            f"  {'total':<18} calls={total.get('calls', 0):<5}"
            f" cached={total.get('cache_hits', 0):<5}"
            f" prompt_tokens={total.get('prompt_tokens', 0):<7}"
            f" completion_tokens={total.get('completion_tokens', 0):<7}"
            f" seconds={total.get('latency_s', 0.0):.2f}; wall time {wall:.2f} s",
            err=True,
        )


def open_runtime(index_paths: list[Path] | None = None) -> Runtime:
    """The runtime of this invocation's settings (and ``index_paths``): every command takes its
    components (LLM, embedder, searcher, reranker) from one, in a ``with`` block that closes it.
    Tests replace this function to give ready-made components."""
    return Runtime(STATE.settings(), index_paths)


RAY_ADDRESS_HELP = "the Ray cluster for --executor ray, e.g. 127.0.0.1:6379 (default: a local Ray)"


def executor_help(work: str) -> str:
    return f"where {work} runs: local (this process) or ray (a Ray cluster)"


@contextmanager
def open_executor(executor: str | None, ray_address: str | None) -> Iterator[Any]:
    """The batch executor the settings (``[executor]``) and the ``--executor`` /
    ``--ray-address`` options name, closed after the block."""
    ex = STATE.settings().executor
    if executor or ray_address:
        if executor not in (None, "local", "ray"):
            raise BioragError(f"--executor {executor!r}: choose local or ray", param="executor")
        ex = ex.model_copy(
            update={"kind": executor or "ray", "ray_address": ray_address or ex.ray_address}
        )
    runner = build_executor(ex)
    try:
        yield runner
    finally:
        runner.close()


@contextmanager
def llm_session(llm: LLM | None) -> Iterator[dict[str, Any]]:
    """Run a block with ``llm`` (None: no LLM); yields a dict that holds the accounting report
    (:meth:`~biorag.llm.accounting.Accounting.report`, no stages without an LLM) once the block
    has finished, its ``wall_s`` the block's wall-clock seconds; closes the LLM however the
    block ends."""
    accounting: dict[str, Any] = {}
    acc = llm.accounting if llm is not None else Accounting()
    try:
        with acc.run():
            yield accounting
        accounting.update(acc.report())
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
