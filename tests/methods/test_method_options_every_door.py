"""A mistyped or unknown method option is the same one line from every door: the CLI (exit
2), the Python API, the service (a JSON 400) and eval (before any answer), and a good one is
converted the same way (checked by biorag.methods.options before the method is made)."""

from __future__ import annotations

import json
from types import SimpleNamespace

import httpx
import pytest
from typer.testing import CliRunner

from biorag import BioRAG
from biorag.cli.main import app
from biorag.config import Settings
from biorag.corpus.datasets.base import QAItem
from biorag.errors import BioragError
from biorag.eval.run.runner import run_eval
from biorag.methods.options import OPTION_DEFAULTS, check_options
from biorag.methods.registry import METHODS, build_method
from biorag.runtime import Runtime

DOCS = [{"id": "1", "text": "Metformin lowers blood glucose in type 2 diabetes."}]
UNKNOWN = "method claims: unknown option 'top_kk' (did you mean 'top_k'?); allowed: "
MISTYPED = "method crag: option upper must be a number (the default is 0.6), not 'high'"
BAD = [("claims", {"top_kk": 3}, UNKNOWN), ("crag", {"upper": "high"}, MISTYPED)]


@pytest.fixture
def index(index_of):
    return index_of(DOCS, "toy")


def test_every_method_declares_its_options_and_its_defaults_pass():
    assert set(OPTION_DEFAULTS) == set(METHODS)
    for name, defaults in OPTION_DEFAULTS.items():
        assert check_options(name, defaults) == dict(defaults), name


def test_values_are_converted_or_refused_with_what_is_allowed(tmp_path):
    rt = Runtime(Settings(home=str(tmp_path)))
    assert build_method("crag", rt, {"k": "5", "upper": "0.7"}).options["k"] == 5
    assert build_method("crag", rt, {"k": None}).options["k"] is None  # None: the settings
    cases = {
        ("claims", "mode", "fast"): "must be one of 'batched' or 'faithful'",
        ("raptor", "max_depth", 2.5): "must be a whole number",
        ("selfrag", "exact_answer", "perhaps"): "must be true or false",
        ("closed-book", "k", 3): "method closed-book takes no options; remove 'k'",
        ("vectorgraphrag", "k", None): r"must be a whole number \(the default is 10\), not None",
    }
    for (method, name, value), says in cases.items():
        with pytest.raises(BioragError, match=says):
            build_method(method, rt, {name: value})
    with pytest.raises(BioragError, match=r"unknown method 'retrive-read' \(did you mean"):
        build_method("retrive-read", rt)


@pytest.mark.parametrize(("method", "options", "says"), BAD)
def test_the_cli_says_it_in_one_line_exit_2(tmp_path, index, method, options, says, monkeypatch):
    monkeypatch.setenv("BIORAG_HOME", str(tmp_path / "home"))
    r = CliRunner().invoke(
        app,
        ["ask", "--index", str(index), "--method", method, "--method-options",
         json.dumps(options), "Does metformin lower glucose?"],
    )  # fmt: skip
    assert r.exit_code == 2, r.output
    assert r.stderr.strip().splitlines() == [f"error: {r.stderr.strip()[7:]}"]
    assert says in r.stderr


@pytest.mark.parametrize(("method", "options", "says"), BAD)
def test_the_api_raises_it(tmp_path, index, hash_embedder, method, options, says):
    rt = Runtime(Settings(home=str(tmp_path / "home")), [index], embedder=hash_embedder)
    with BioRAG(index, runtime=rt) as rag, pytest.raises(BioragError) as e:
        rag.ask("Does metformin lower glucose?", method=method, **options)
    assert says in str(e.value)


@pytest.mark.parametrize(("method", "options", "says"), BAD)
async def test_the_service_answers_a_json_400(tmp_path, index, hash_embedder, method, options,
                                              says):  # fmt: skip
    pytest.importorskip("fastapi")
    from biorag.serve.app import ServerConfig, create_app

    settings = Settings(home=str(tmp_path / "home"))
    rt = Runtime(settings, [index], embedder=hash_embedder)
    served = create_app(settings, ServerConfig(index_paths=[index]), runtime=rt)
    transport = httpx.ASGITransport(app=served, raise_app_exceptions=False)
    async with httpx.AsyncClient(transport=transport, base_url="http://t") as c:
        for stream in (False, True):
            body = {"question": "q?", "method": method, "method_options": options,
                    "stream": stream}  # fmt: skip
            r = await c.post("/v1/ask", json=body)
            assert r.status_code == 400, r.text
            assert says in r.json()["error"]["message"]
    rt.close()


@pytest.mark.parametrize(("method", "options", "says"), BAD)
def test_eval_refuses_before_any_answer(tmp_path, index, method, options, says):
    item = QAItem(id="q1", dataset="toy", question="Does metformin lower glucose?",
                  options={"A": "yes"}, gold="A")  # fmt: skip

    def loader(name, path, **kw):
        return SimpleNamespace(items=[item], skipped=[], info={"n": 1})

    out = tmp_path / "run"
    with pytest.raises(BioragError) as e:
        run_eval(Settings(home=str(tmp_path / "home")), "toy", tmp_path, methods=[method],
                 method_options={method: options}, index_paths=[index], out_dir=out,
                 loader=loader)  # fmt: skip
    assert says in str(e.value)
    assert not (out / "predictions.jsonl").exists()
