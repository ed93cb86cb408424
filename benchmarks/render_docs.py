"""Renders every figure of the docs from the committed result files (benchmarks/figures/).

    python benchmarks/render_docs.py            # rewrites the docs' figures in place
    python benchmarks/render_docs.py --check    # exit 1, naming each stale figure
    python benchmarks/render_docs.py --check --json

``--check`` also fails where a table of a measured doc (docs/benchmarks.md, docs/scaling.md)
stands outside a figure block: a figure typed by hand. A table that holds no measured figure
(settings, a list of options) says so on the line above it: ``<!-- not a figure: why -->``.
tests/docs/test_render_docs.py runs ``--check``.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path

# Run as a script, benchmarks/ is sys.path[0] already; imported (tests/docs), the importer puts
# it there (and takes it away again): only where neither did is it added.
HERE = str(Path(__file__).resolve().parent)
if HERE not in sys.path:
    sys.path.insert(0, HERE)

import figures  # noqa: E402

REPO = figures.REPO
DOCS = ["README.md", "docs/benchmarks.md", "docs/scaling.md", "docs/testing.md"]
MEASURED = ["docs/benchmarks.md", "docs/scaling.md"]

BLOCK = re.compile(r"<!-- figure:(?P<name>\S+) -->\n(?P<body>.*?)<!-- /figure:(?P=name) -->", re.S)
INLINE = re.compile(r"<!--v (?P<spec>[^>]+?)-->(?P<body>.*?)<!--/v-->", re.S)
OPEN = re.compile(r"<!-- (/?)figure:(\S+) -->")
NOT_A_FIGURE = "<!-- not a figure"


@dataclass
class Report:
    """What a render found: the figures that changed, the errors, the hand-typed tables."""

    changed: dict[str, list[str]] = field(default_factory=dict)
    errors: list[str] = field(default_factory=list)
    untracked_tables: list[str] = field(default_factory=list)
    rendered: int = 0

    def ok(self) -> bool:
        return not (self.changed or self.errors or self.untracked_tables)


def render_text(text: str, doc: str, report: Report) -> str:
    """``text`` with every figure block and inline value rendered anew."""

    def block(m: re.Match[str]) -> str:
        name = m["name"]
        try:
            body = figures.render(name) + "\n"
        except figures.FigureError as e:
            report.errors.append(f"{doc}: figure:{name}: {e}")
            return m[0]
        report.rendered += 1
        if body != m["body"]:
            report.changed.setdefault(doc, []).append(f"figure:{name}")
        return f"<!-- figure:{name} -->\n{body}<!-- /figure:{name} -->"

    def inline(m: re.Match[str]) -> str:
        spec = m["spec"].strip()
        try:
            body = figures.value(spec)
        except figures.FigureError as e:
            report.errors.append(f"{doc}: v {spec}: {e}")
            return m[0]
        report.rendered += 1
        if body != m["body"]:
            report.changed.setdefault(doc, []).append(f"v {spec}: {m['body']!r} -> {body!r}")
        return f"<!--v {spec}-->{body}<!--/v-->"

    _check_markers(text, doc, report)
    return INLINE.sub(inline, BLOCK.sub(block, text))


def _check_markers(text: str, doc: str, report: Report) -> None:
    """Every figure block opened is closed, with nothing but its body between."""
    stack: list[str] = []
    for m in OPEN.finditer(text):
        closing, name = m[1] == "/", m[2]
        if not closing:
            if stack:
                report.errors.append(f"{doc}: figure:{name} opens inside figure:{stack[-1]}")
            stack.append(name)
        elif not stack or stack.pop() != name:
            report.errors.append(f"{doc}: /figure:{name} closes no open figure:{name}")
    for name in stack:
        report.errors.append(f"{doc}: figure:{name} is never closed (<!-- /figure:{name} -->)")


def hand_typed_tables(text: str, doc: str) -> list[str]:
    """The tables of ``text`` outside figure blocks and code fences, not marked as no figure."""
    found, inside, fence, prev = [], 0, False, ""
    in_table = False
    for no, line in enumerate(text.splitlines(), 1):
        if line.startswith("```"):
            fence = not fence
        m = OPEN.search(line)
        if m:
            inside += -1 if m[1] == "/" else 1
        is_row = line.lstrip().startswith("|") and not fence
        if is_row and not in_table and inside == 0 and not prev.startswith(NOT_A_FIGURE):
            found.append(f"{doc}:{no}: a table typed by hand: {line.strip()[:70]}")
        in_table = is_row
        prev = line.strip() if line.strip() else prev
    return found


def run(check: bool, docs: list[str] | None = None) -> Report:
    figures.load_all()
    report = Report()
    for doc in docs or DOCS:
        path = REPO / doc
        text = path.read_text(encoding="utf-8")
        new = render_text(text, doc, report)
        if doc in MEASURED:
            report.untracked_tables += hand_typed_tables(text, doc)
        if not check and new != text:
            tmp = path.with_suffix(path.suffix + ".tmp")
            tmp.write_text(new, encoding="utf-8")
            tmp.replace(path)
    return report


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--check", action="store_true", help="exit 1 if any figure is stale")
    ap.add_argument("--json", action="store_true", help="print the report as JSON")
    ap.add_argument("docs", nargs="*", help=f"docs to render (default: {' '.join(DOCS)})")
    args = ap.parse_args()
    report = run(args.check, args.docs or None)
    if args.json:
        print(json.dumps(report.__dict__ | {"ok": report.ok()}, indent=1))
    for line in report.errors:
        print(f"error: {line}", file=sys.stderr)
    if args.check:
        for doc, names in report.changed.items():
            for name in names:
                print(f"stale: {doc}: {name}", file=sys.stderr)
        for line in report.untracked_tables:
            print(line, file=sys.stderr)
        if not report.ok():
            print("the docs differ from their result files: run python benchmarks/render_docs.py",
                  file=sys.stderr)  # fmt: skip
            return 1
    elif report.errors:
        return 1
    print(f"{report.rendered} figures rendered", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
