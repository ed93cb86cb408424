"""``ask --json`` reports, per stage, LLM calls, cache hits, tokens and latency, and the wall time
of the whole answer (never 0)."""

from __future__ import annotations

import json

OPTIONS = json.dumps({"A": "yes", "B": "no"})
COUNTERS = ("calls", "cache_hits", "prompt_tokens", "completion_tokens", "latency_s", "failures")


def _ask(cli, **env):
    args = ("ask", "--method", "closed-book", "--options", OPTIONS, "--json", "Does aspirin?")
    res = cli(*args, **env)
    assert res.exit_code == 0, res.output
    return json.loads(res.stdout)["accounting"]


def _check_totals(acc: dict) -> None:
    for k in COUNTERS:
        assert k in acc["total"]
        assert all(k in row for row in acc["stages"].values())
        summed = sum(row[k] for row in acc["stages"].values())
        assert abs(acc["total"][k] - summed) < 1e-3, k


def test_ask_json_accounting_with_the_mock_backend(cli):
    acc = _ask(cli, llm_backend="mock", llm_mock_script="dry-run")
    assert set(acc["stages"]) == {"answer", "answer_extract"}
    for row in acc["stages"].values():
        assert row["calls"] == 1 and row["cache_hits"] == 0 and row["failures"] == 0
        assert row["prompt_tokens"] > 0 and row["completion_tokens"] > 0
    _check_totals(acc)
    assert acc["total"]["calls"] == 2 and acc["wall_s"] > 0


def test_ask_json_latency_cache_hits_and_wall_time_over_http(cli, fake_openai):
    def reply(body: dict) -> tuple:
        text = '{"answer": "A"}' if body.get("response_format") else "Reasoning: yes. A"
        return 200, {}, fake_openai.completion(text, body), 0.05

    fake_openai.default = reply
    env = {"llm_backend": "openai", "llm_base_url": fake_openai.url, "llm_model": "m"}
    first = _ask(cli, **env)
    _check_totals(first)
    sent = len(fake_openai.requests)
    assert first["total"]["calls"] == sent > 0 and first["total"]["cache_hits"] == 0
    assert first["total"]["prompt_tokens"] == 7 * sent  # the server's usage, per call
    for row in first["stages"].values():
        assert row["latency_s"] >= 0.05 * row["calls"]
    assert first["wall_s"] >= first["total"]["latency_s"]
    again = _ask(cli, **env)  # a new process: the same question is answered from the cache
    assert len(fake_openai.requests) == sent
    assert again["total"]["cache_hits"] == again["total"]["calls"] == sent
    assert again["total"]["prompt_tokens"] == 0 and again["total"]["latency_s"] == 0
    assert again["wall_s"] > 0


def test_the_accounting_table_shows_the_wall_time(capsys):
    from biorag.cli.common import print_accounting
    from biorag.llm.accounting import Accounting

    print_accounting({**Accounting().report(), "wall_s": 1.5})
    assert capsys.readouterr().err == "accounting: no LLM calls (no-LLM operators) in 1.50 s\n"
    acc = Accounting()
    acc.record_call("answer", 10, 2, 0.25)
    acc.record_cache_hit("answer")
    print_accounting({**acc.report(), "wall_s": 0.5})
    err = capsys.readouterr().err.splitlines()
    assert err[1].split() == [
        "answer",
        "calls=2",
        "cached=1",
        "prompt_tokens=10",
        "completion_tokens=2",
        "seconds=0.25",
    ]
    assert err[2].startswith("  total ") and err[2].endswith("; wall time 0.50 s")
