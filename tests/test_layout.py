"""The repository's layers: src/ (the installed ``biorag``) depends on neither devkit/ nor tests/;
benchmarks/ depend on src/ and devkit/, never on tests/. Every import counts, also one inside a
function."""

from __future__ import annotations

import ast
import re
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


# -- biorag's own module graph -------------------------------------------------------------------


def module_graph() -> dict[str, set[str]]:
    """biorag's modules and the biorag modules each imports (also inside functions), from the
    source: ``from biorag.x import y`` counts ``biorag.x.y`` when that is a module."""
    root = REPO / "src"
    modules = {
        ".".join(p.relative_to(root).with_suffix("").parts).removesuffix(".__init__"): p
        for p in (root / "biorag").rglob("*.py")
    }
    graph: dict[str, set[str]] = {name: set() for name in modules}
    for name, path in modules.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            targets: list[str] = []
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    parts = package.split(".")
                    base = ".".join(parts[: len(parts) - node.level + 1] + ([base] if base else []))
                targets = [base, *(f"{base}.{a.name}" for a in node.names)]
            for target in targets:
                while target and target not in modules:
                    target = target.rpartition(".")[0]
                if target and target != name:
                    graph[name].add(target)
    return graph


def test_no_cycle_between_subpackages() -> None:
    nx = pytest.importorskip("networkx")
    graph = module_graph()

    def sub(m: str) -> str:
        return ".".join(m.split(".")[:2])

    packages = nx.DiGraph(
        (sub(a), sub(b)) for a, targets in graph.items() for b in targets if sub(a) != sub(b)
    )
    assert list(nx.simple_cycles(packages)) == []


def test_no_module_cycle_through_the_stores_or_the_openai_backend() -> None:
    """Backends depend on interfaces: kg/stores (the factory imports the backends, never the
    other way) and llm/openai (streaming reads through the transport, not the backend)."""
    nx = pytest.importorskip("networkx")
    modules = nx.DiGraph((a, b) for a, targets in module_graph().items() for b in targets)
    cycles = [
        sorted(c)
        for c in nx.strongly_connected_components(modules)
        if len(c) > 1 and any(m.startswith(("biorag.kg.", "biorag.llm.openai")) for m in c)
    ]
    assert cycles == []


def test_the_model_is_never_typed_any() -> None:
    """The chat model is a ChatModel (biorag.llm.base), not Any, wherever it is passed."""
    pattern = re.compile(r"\b(llm|judge_llm|reasoning_llm)\s*:\s*Any\b")
    found = [
        f"{p.relative_to(REPO)}:{i}"
        for p in sorted((REPO / "src").rglob("*.py"))
        for i, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1)
        if pattern.search(line)
    ]
    assert found == []
