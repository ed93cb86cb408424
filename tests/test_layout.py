"""The repository's layers: src/ (the installed ``biorag``) depends on neither devkit/ nor tests/;
benchmarks/ depend on src/ and devkit/, never on tests/. Every import counts, also one inside a
function."""

from __future__ import annotations

import ast
import tomllib
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


def imported_roots(source: str, filename: str = "<source>") -> set[str]:
    """The top-level names of every absolute import in ``source``, wherever it stands."""
    roots: set[str] = set()
    for node in ast.walk(ast.parse(source, filename=filename)):
        if isinstance(node, ast.Import):
            roots.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            roots.add(node.module.split(".")[0])
    return roots


def offenders(folder: str, forbidden: set[str]) -> list[str]:
    out = []
    for path in sorted((REPO / folder).rglob("*.py")):
        bad = imported_roots(path.read_text(encoding="utf-8"), str(path)) & forbidden
        if bad:
            out.append(f"{path.relative_to(REPO)} imports {', '.join(sorted(bad))}")
    return out


def test_src_imports_neither_devkit_nor_tests() -> None:
    assert offenders("src", {"devkit", "tests"}) == []


def test_benchmarks_import_no_tests() -> None:
    assert offenders("benchmarks", {"tests"}) == []


def test_devkit_imports_no_tests() -> None:
    assert offenders("devkit", {"tests"}) == []


def test_devkit_is_not_in_the_wheel() -> None:
    config = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))
    assert config["tool"]["setuptools"]["packages"]["find"]["where"] == ["src"]
    assert not (REPO / "src" / "devkit").exists()


@pytest.mark.parametrize(
    "source",
    [
        "import tests",
        "import tests.conftest as c",
        "from tests.strata.conftest import MESH_XML",
        "def f():\n    from tests import x\n",
        "class C:\n    def m(self):\n        import devkit.servers\n",
        "try:\n    import os, devkit\nexcept ImportError:\n    pass\n",
    ],
)
def test_every_import_is_seen(source: str) -> None:
    assert imported_roots(source) & {"tests", "devkit"}


def test_relative_and_lookalike_imports_are_not_counted() -> None:
    assert not imported_roots("from . import tests\nimport testsuite\nfrom devkits import x\n") & {
        "tests",
        "devkit",
    }
