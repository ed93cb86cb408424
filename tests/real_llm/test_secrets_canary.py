"""A canary API key never appears in anything biorag prints or writes.

A real llama-server started with ``--api-key`` demands the key; ``OPENAI_API_KEY`` (the default
``llm.api_key_env``) carries a canary. Commands that succeed with it, and commands that fail in
the ways a user makes them fail (a key put in the settings file or in a ``BIORAG_`` variable,
under its own name or a mistyped one, a key in the URL, a wrong key, a server that is down, bad
input), all run with ``--verbose``;
then every byte they printed and every file under the test's directory (home, LLM cache, run
directories, KG) is searched for the canary.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from devkit.servers import LlamaServer, free_port, running
from tests.demo_data import write_pqal
from tests.real_llm.conftest import biorag, demo_questions, llm_env

pytestmark = pytest.mark.real_llm

CANARY = "sk-canary-5e1f0b7d9a2c4e68"


@pytest.fixture(scope="module")
def keyed_llama(llama_bin: Path, smol_gguf: Path, tmp_path_factory: pytest.TempPathFactory):
    log = tmp_path_factory.mktemp("keyed") / "server.log"
    yield from running(
        LlamaServer(
            llama_bin, smol_gguf, ctx=4096, parallel=1, extra=["--api-key", CANARY], log_path=log
        )
    )


def test_no_command_prints_or_writes_the_key(
    keyed_llama: LlamaServer, demo_index: Path, tmp_path: Path
) -> None:
    home = tmp_path / "home"
    env = llm_env(keyed_llama.url, home, OPENAI_API_KEY=CANARY, BIORAG_RETRIEVAL_K="2")
    q = demo_questions(1)[0]["question"]
    data = tmp_path / "ori_pqal.json"
    write_pqal(data, 2)
    corpus = tmp_path / "qa.jsonl"
    corpus.write_text(json.dumps({"question": q, "answer": "yes"}) + "\n", encoding="utf-8")
    toml = tmp_path / "with_key.toml"
    toml.write_text(f'[llm]\napi_key = "{CANARY}"\n', encoding="utf-8")
    mistyped = tmp_path / "mistyped_key.toml"  # a key no settings check knows as secret
    mistyped.write_text(f'[llm]\napi_kee = "{CANARY}"\n', encoding="utf-8")
    url_with_key = keyed_llama.url.replace("http://", f"http://user:{CANARY}@")
    down = f"http://127.0.0.1:{free_port()}/v1"

    ok = [
        (["config", "show", "--json"], {}),
        (["ask", "--index", str(demo_index), "--method", "retrieve-read", "--json", q], {}),
        (["eval", "--dataset", "pubmedqa", "--data", str(data), "--setting",
          "reasoning-required", "--methods", "closed-book", "--out", str(tmp_path / "run"),
          "--json"], {}),
        (["kg", "build", "--from", str(corpus), "--format", "jsonl", "--out",
          str(tmp_path / "kg"), "--json"], {}),
    ]  # fmt: skip
    failing = [
        (["--config", str(toml), "ask", "--index", str(demo_index), q], {}),
        (["ask", "--index", str(demo_index), q], {"BIORAG_LLM_API_KEY": CANARY}),
        (["--config", str(mistyped), "ask", "--index", str(demo_index), q], {}),
        (["ask", "--index", str(demo_index), q], {"BIORAG_LLM_API_KEE": CANARY}),
        (["ask", "--index", str(demo_index), "--method", "closed-book", q],
         {"BIORAG_LLM_BASE_URL": url_with_key, "OPENAI_API_KEY": "sk-wrong-key-000"}),
        (["ask", "--index", str(demo_index), "--method", "closed-book", q],
         {"OPENAI_API_KEY": "sk-wrong-key-000"}),
        (["ask", "--index", str(demo_index), "--method", "closed-book", q],
         {"BIORAG_LLM_BASE_URL": down}),
        (["ask", "--index", str(demo_index), "   "], {}),
    ]  # fmt: skip
    down_eval = ["eval", "--dataset", "pubmedqa", "--data", str(data), "--setting",
                 "reasoning-required", "--methods", "closed-book", "--out",
                 str(tmp_path / "run_down")]  # fmt: skip
    printed = []
    for args, extra in ok:
        r = biorag(["--verbose", *args], {**env, **extra})
        assert r["rc"] == 0, (args, r["stderr"][-2000:])
        printed.append(r["stdout"] + r["stderr"])
    for args, extra in failing:
        r = biorag(["--verbose", *args], {**env, **extra})
        assert r["rc"] != 0, args
        assert "Traceback" not in r["stderr"], (args, r["stderr"][-2000:])
        printed.append(r["stdout"] + r["stderr"])
    r = biorag(["--verbose", *down_eval], {**env, "BIORAG_LLM_BASE_URL": down})
    assert "Traceback" not in r["stderr"], r["stderr"][-2000:]  # errors recorded, or refused
    printed.append(r["stdout"] + r["stderr"])
    # the key did its job: the server answered the run that carried it
    answered = json.loads((tmp_path / "run" / "metrics.json").read_text())
    assert answered["methods"]["closed-book"]["errors"] == 0
    assert not [i for i, text in enumerate(printed) if CANARY in text]
    leaked = [
        str(p.relative_to(tmp_path))
        for p in tmp_path.rglob("*")
        if p.is_file() and p not in (toml, mistyped) and CANARY.encode() in p.read_bytes()
    ]
    assert not leaked, leaked
    assert (home / "llm_cache.sqlite").is_file()  # the cache that was searched holds answers
