"""Lenient JSON parsing for answers of small models.

Order of attempts: strict ``json.loads`` of the whole text; the contents of ```json fences;
for an answer cut off inside a list (``max_tokens``, or a loop cut by
:mod:`biorag.llm.repetition`), the list's complete items (:func:`complete_items`; a half-written
last item is dropped, not guessed at); the first ``{...}`` / ``[...]`` block that decodes
(trailing prose ignored); ``json_repair`` on the most JSON-looking part. Each candidate value
is checked against the (optional) schema's top-level ``type`` and ``required`` keys; the first
one that passes wins. When nothing passes, the value is None and the error says why, so callers
always learn that parsing failed.
"""

from __future__ import annotations

import json
import re
from typing import Any

import json_repair

_FENCE = re.compile(r"```(?:json|JSON)?[ \t]*\n?(.*?)(?:```|$)", re.S)
_DECODER = json.JSONDecoder()
_TYPES: dict[str, type | tuple[type, ...]] = {
    "object": dict,
    "array": list,
    "string": str,
    "number": (int, float),
    "integer": int,
    "boolean": bool,
}


def schema_problem(value: Any, schema: dict[str, Any] | None) -> str | None:
    """A light check of ``value`` against ``schema``: top-level type and required keys.

    Returns None when the value passes, else a short description of the problem.
    """
    if not schema:
        return None
    expected = schema.get("type")
    if isinstance(expected, str) and expected in _TYPES:
        ok = isinstance(value, _TYPES[expected])
        if expected in ("number", "integer") and isinstance(value, bool):
            ok = False
        if not ok:
            return f"expected a JSON {expected}, got {type(value).__name__}"
    required = schema.get("required") or []
    if required and isinstance(value, dict):
        missing = [k for k in required if k not in value]
        if missing:
            return f"missing required keys {missing}"
    return None


def _fenced(text: str) -> list[str]:
    return [m.group(1).strip() for m in _FENCE.finditer(text) if m.group(1).strip()]


def _first_blocks(text: str, limit: int = 20) -> list[Any]:
    """Values decoded from the first positions where ``{`` or ``[`` starts a valid JSON block."""
    values: list[Any] = []
    for m in re.finditer(r"[\[{]", text):
        try:
            value, _end = _DECODER.raw_decode(text, m.start())
        except json.JSONDecodeError:
            continue
        values.append(value)
        if len(values) >= limit:
            break
    return values


def _repair_source(text: str) -> str:
    fences = _fenced(text)
    source = fences[0] if fences else text
    m = re.search(r"[\[{]", source)
    return source[m.start() :] if m else source


def complete_items(source: str) -> str | None:
    """For JSON cut off inside a list, the JSON text of everything up to the list's last
    complete item, with the open brackets closed: ``[{"a": 1}, {"b": 2}, {"c"`` gives
    ``[{"a": 1}, {"b": 2}]`` and ``{"claims": ["x", "y", "z`` gives ``{"claims": ["x", "y"]}``
    (of the lists open at the end, the outermost one with a complete item is cut, so an item
    is kept whole or not at all). None when ``source`` (from its first bracket on) is not cut
    off, or no open list in it has a complete item."""
    start = re.search(r"[\[{]", source)
    if start is None:
        return None
    stack: list[str] = []
    in_string = escaped = False
    cuts: dict[int, int] = {}  # depth of an open list -> end of its last complete item

    def mark(end: int) -> None:
        if stack and stack[-1] == "[":
            cuts[len(stack)] = end

    for i in range(start.start(), len(source)):
        ch = source[i]
        if in_string:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                in_string = False
                mark(i + 1)
            continue
        if ch == '"':
            in_string = True
        elif ch in "[{":
            stack.append(ch)
        elif ch in "]}":
            if not stack:
                return None
            cuts.pop(len(stack), None)  # the container closed: its cut points are gone
            stack.pop()
            if not stack:
                return None  # the first block closes: nothing was cut off
            mark(i + 1)
        elif ch == ",":
            mark(i)
    if not cuts:
        return None
    depth = min(cuts)
    closers = "".join("]" if b == "[" else "}" for b in reversed(stack[:depth]))
    return source[start.start() : cuts[depth]].rstrip().rstrip(",") + closers


def parse_json_lenient(
    text: str, schema: dict[str, Any] | None = None
) -> tuple[Any | None, str | None]:
    """Parse JSON out of a model's answer: ``(value, None)``, or ``(None, error)`` on failure."""
    if not text or not text.strip():
        return None, "empty response, no JSON to parse"
    stripped = text.strip()
    problems: list[str] = []

    def accept(value: Any, how: str) -> bool:
        problem = schema_problem(value, schema)
        if problem is None:
            return True
        problems.append(f"{how}: {problem}")
        return False

    try:
        value = json.loads(stripped)
        if accept(value, "strict"):
            return value, None
    except json.JSONDecodeError:
        pass
    for block in _fenced(stripped):
        try:
            value = json.loads(block)
        except json.JSONDecodeError:
            continue
        if accept(value, "fenced"):
            return value, None
    source = _repair_source(stripped)
    salvaged = complete_items(source)
    if salvaged is not None:
        try:
            value = json.loads(salvaged)
        except json.JSONDecodeError:
            pass
        else:
            if accept(value, "complete items of a cut-off list"):
                return value, None
    for value in _first_blocks(stripped):
        if accept(value, "extracted block"):
            return value, None
    if re.search(r"[\[{]", source):
        try:
            value = json_repair.loads(source)
        except Exception as e:  # json_repair should not raise, but never let it escape
            value = None
            problems.append(f"json_repair failed: {e}")
        if value not in ("", None) and accept(value, "repaired"):
            return value, None
    head = stripped[:80].replace("\n", " ")
    if problems:
        return None, f"JSON found but unusable ({'; '.join(problems[:3])}); answer starts {head!r}"
    return None, f"no JSON found in the answer; it starts {head!r}"
