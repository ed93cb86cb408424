"""Every figure of the docs, rendered from a committed result file (never typed by hand).

A doc holds two kinds of rendered text, each between markers the renderer rewrites:

* a **block** (a table, or bullets with their figures)::

      <!-- figure:NAME -->
      ...rendered by the function registered as NAME...
      <!-- /figure:NAME -->

* an **inline value** inside a sentence, straight from a result file::

      MAP@10 is <!--v retrieval_quality.json:bioasq/hybrid/map@10|.3f-->0.737<!--/v-->

  ``FILE:PATH|FMT``: FILE is under ``benchmarks/results/``, PATH its keys (``/``-separated;
  an integer indexes a list), FMT a Python format spec (``.3f``, ``,``, ``.1%``; none: as is).
  ``<!--v NAME-->`` renders a registered figure inline (a short computed value).

Figures are registered in the modules ``benchmarks/figures/fig_*.py`` (one per doc section or
result family) with :func:`figure`; a family of blocks that differ only by a label (one per
result file) with :func:`family` (``<!-- figure:FAMILY/LABEL -->``). ``benchmarks/render_docs.py``
rewrites the docs; ``--check`` fails on any difference, and the tests run it.
"""

from __future__ import annotations

import importlib
import json
import pkgutil
from collections.abc import Callable, Iterable, Sequence
from functools import cache
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
RESULTS = REPO / "benchmarks" / "results"

Render = Callable[[], str]
FamilyRender = Callable[[str], str]

FIGURES: dict[str, Render] = {}
FAMILIES: dict[str, FamilyRender] = {}


class FigureError(Exception):
    """A figure that cannot be rendered: its result file or a key in it is missing."""


def figure(name: str) -> Callable[[Render], Render]:
    """Register ``fn() -> markdown`` as the figure ``name``."""

    def register(fn: Render) -> Render:
        if name in FIGURES:
            raise FigureError(f"figure {name!r} is registered twice")
        FIGURES[name] = fn
        return fn

    return register


def family(name: str) -> Callable[[FamilyRender], FamilyRender]:
    """Register ``fn(label) -> markdown`` as the figures ``name/LABEL``."""

    def register(fn: FamilyRender) -> FamilyRender:
        FAMILIES[name] = fn
        return fn

    return register


def load_all() -> None:
    """Import every ``fig_*`` module of this package (each registers its figures)."""
    for mod in pkgutil.iter_modules(__path__):
        if mod.name.startswith("fig_"):
            importlib.import_module(f"{__name__}.{mod.name}")


def render(name: str) -> str:
    """The markdown of the figure ``name`` (or ``family/label``)."""
    if name in FIGURES:
        return FIGURES[name]().rstrip("\n")
    head, _, label = name.partition("/")
    if label and head in FAMILIES:
        return FAMILIES[head](label).rstrip("\n")
    raise FigureError(f"no figure is registered as {name!r} (benchmarks/figures/fig_*.py)")


@cache
def result(path: str) -> Any:
    """The JSON of ``benchmarks/results/<path>``."""
    file = RESULTS / path
    if not file.is_file():
        raise FigureError(f"result file benchmarks/results/{path} is missing")
    return json.loads(file.read_text(encoding="utf-8"))


def jsonl(path: str) -> list[Any]:
    """The records of ``benchmarks/results/<path>``, one JSON per line."""
    file = RESULTS / path
    if not file.is_file():
        raise FigureError(f"result file benchmarks/results/{path} is missing")
    return [json.loads(x) for x in file.read_text(encoding="utf-8").splitlines() if x.strip()]


def dig(data: Any, keys: str | Sequence[str | int], where: str = "") -> Any:
    """``data[k1][k2]...`` for ``keys`` ('a/b/0/c' or a sequence); a missing key names itself."""
    parts = keys.split("/") if isinstance(keys, str) else list(keys)
    cur = data
    for i, key in enumerate(parts):
        try:
            cur = cur[int(key)] if isinstance(cur, list) else cur[key]
        except (KeyError, IndexError, ValueError, TypeError) as e:
            path = "/".join(str(p) for p in parts[: i + 1])
            raise FigureError(f"{where or 'result'} has no {path!r}") from e
    return cur


def find_row(path: str, keys: str, **match: Any) -> dict[str, Any]:
    """The first row of the list at ``keys`` of ``benchmarks/results/<path>`` whose fields equal
    ``match`` (``find_row("retrieval_speed.json", "rows", scale="1m", stage="bm25")``); where
    none does, a :class:`FigureError` naming what was looked for."""
    for row in dig(result(path), keys, path):
        if all(k in row and row[k] == v for k, v in match.items()):
            return dict(row)
    want = ", ".join(f"{k}={v!r}" for k, v in match.items())
    raise FigureError(f"{path} has no row in {keys!r} with {want}")


def count(share: float, n: int) -> int:
    """The number of questions a share of ``n`` stands for (accuracy 0.46 of 50: 23)."""
    return round(share * n)


def score_summary(scores: dict[str, Any], pubmedqa: str, bioasq: str) -> str:
    """A run's scores in words, by one template per dataset: ``bioasq`` where the scores hold a
    yes/no block (BioASQ's), else ``pubmedqa`` (PubMedQA's top-level accuracy and macro-F1).

    A template is a format string over the scores (``{accuracy:.2f}``, ``{yesno[macro_f1]:.2f}``,
    ``{factoid[mrr]:.2f}``); ``{correct}`` (PubMedQA), ``{yesno_correct}`` and
    ``{factoid_correct}`` (BioASQ, strict) are the questions an accuracy stands for
    (:func:`count`)."""
    if "yesno" in scores:
        yn, fa = scores["yesno"], scores["factoid"]
        return bioasq.format(
            **scores,
            yesno_correct=count(yn["accuracy"], yn["n"]),
            factoid_correct=count(fa["strict_accuracy"], fa["n"]),
        )
    return pubmedqa.format(**scores, correct=count(scores["accuracy"], scores["n"]))


def value(spec: str) -> str:
    """An inline value: ``FILE:PATH|FMT`` from a result file, or a registered figure."""
    if ":" not in spec:
        return render(spec)
    file, _, rest = spec.partition(":")
    path, _, fmt = rest.partition("|")
    return fmt_value(dig(result(file), path, file), fmt)


def fmt_value(x: Any, fmt: str = "") -> str:
    """``x`` formatted by the format spec ``fmt`` (none: as it is)."""
    if not fmt:
        return str(x)
    try:
        return format(x, fmt)
    except (TypeError, ValueError) as e:
        raise FigureError(f"cannot format {x!r} with {fmt!r}") from e


def num(x: Any, digits: int = 3, *, thousands: bool = True, bold: bool = False) -> str:
    """A number with ``digits`` decimals (thousands separated); '' for None."""
    if x is None:
        return ""
    if isinstance(x, bool) or not isinstance(x, int | float):
        return str(x)
    text = f"{x:,.{digits}f}" if thousands else f"{x:.{digits}f}"
    return f"**{text}**" if bold else text


def signed(x: float, digits: int = 3) -> str:
    """``x`` with its sign always shown (``+0.007``, ``-0.012``)."""
    return f"{x:+.{digits}f}"


def ci(lo: float, hi: float, digits: int = 3) -> str:
    """A confidence interval as ``[+0.000, +0.015]``."""
    return f"[{signed(lo, digits)}, {signed(hi, digits)}]"


def table(header: Sequence[str], rows: Iterable[Sequence[Any]], align: str = "") -> str:
    """A markdown table. ``align``: one character per column (``l``, ``r``, ``c``; default
    left)."""
    marks = {"l": "---", "r": "---:", "c": ":-:"}
    spec = align or "l" * len(header)
    if len(spec) != len(header):
        raise FigureError(f"align {align!r} does not give one mark per column of {header}")
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join(marks[a] for a in spec) + "|"]
    for row in rows:
        cells = ["" if c is None else str(c).replace("|", "\\|") for c in row]
        if len(cells) != len(header):
            raise FigureError(f"row {cells} does not have the {len(header)} columns of {header}")
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def source(path: str, data: dict[str, Any] | None = None) -> str:
    """One line naming a figure's result file and, where it records them, the commit, the
    scoring and the command that made it."""
    data = data if data is not None else result(path)
    prov = data.get("provenance") if isinstance(data, dict) else None
    prov = prov if isinstance(prov, dict) else (data if isinstance(data, dict) else {})
    bits = [f"`benchmarks/results/{path}`"]
    if prov.get("commit"):
        bits.append(f"commit {prov['commit']}")
    if prov.get("scoring"):
        bits.append(f"{prov['scoring']} scoring")
    return "Result: " + ", ".join(bits) + "."


def run_recorded(run: str) -> list[str]:
    """What an eval run directory ``benchmarks/results/<run>/`` records of how it was made: its
    scoring and commit (metrics.json, else run.json; the scoring of its methods' scores where
    the run predates the key), each named as missing where it is not recorded."""
    metrics, cfg = result(f"{run}/metrics.json"), result(f"{run}/run.json")
    scoring = metrics.get("scoring") or cfg.get("scoring")
    if not scoring:
        modes = {(e.get("scores") or {}).get("scoring") for e in metrics["methods"].values()}
        scoring = next(iter(modes)) if len(modes) == 1 else None
    commit = metrics.get("commit") or cfg.get("commit")
    return [f"{scoring} scoring" if scoring else "scoring not recorded",
            f"commit {commit}" if commit else "commit not recorded"]  # fmt: skip
