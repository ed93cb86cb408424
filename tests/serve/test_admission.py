"""Asks beyond the slots wait their turn (bounded, fair across clients) instead of a 503, and a
client that hangs up frees its slot at once: unit tests of the queue, then the app over a slow
scripted model."""

from __future__ import annotations

import asyncio
import json

import httpx
import pytest

pytest.importorskip("fastapi")

from fastapi import HTTPException

from biorag.serve.admission import Admission


async def test_waiters_are_served_in_turn_across_clients():
    adm = Admission(1, max_queue=10, max_wait=5)
    await adm.take("a")  # the one slot
    order: list[str] = []

    async def ask(client: str, tag: str) -> None:
        await adm.take(client)
        order.append(tag)

    tasks = [asyncio.create_task(ask(c, t)) for c, t in
             [("a", "a1"), ("a", "a2"), ("a", "a3"), ("b", "b1")]]  # fmt: skip
    await asyncio.sleep(0.01)
    assert adm.queued == 4
    for _ in range(4):
        adm.give()
        await asyncio.sleep(0.01)
    assert order == ["a1", "b1", "a2", "a3"]  # b's one ask is not behind all of a's
    await asyncio.gather(*tasks)
    adm.give()
    assert adm.busy == 0 and adm.queued == 0


async def test_a_full_queue_or_a_long_wait_is_a_503_and_a_leaver_leaves_the_queue():
    adm = Admission(1, max_queue=1, max_wait=0.05)
    await adm.take()
    waiter = asyncio.create_task(adm.take("x"))
    await asyncio.sleep(0.01)
    with pytest.raises(HTTPException) as full:
        await adm.take("y")
    assert full.value.status_code == 503 and "1 asks wait" in full.value.detail
    with pytest.raises(HTTPException) as late:
        await waiter
    assert "within 0.05 s" in late.value.detail and adm.queued == 0
    adm.max_wait = 5
    leaver = asyncio.create_task(adm.take("z"))
    await asyncio.sleep(0.01)
    leaver.cancel()
    await asyncio.sleep(0.01)
    assert adm.queued == 0
    adm.give()
    assert adm.busy == 0


@pytest.fixture
def slow_app(tmp_path, hash_embedder, index_of):
    from biorag.config import Settings
    from biorag.runtime import Runtime
    from biorag.serve.app import ServerConfig, create_app

    index = index_of([{"id": "1", "text": "Aspirin inhibits platelets."}], "toy")
    script = tmp_path / "script.json"
    script.write_text(json.dumps([{"stage": "answer", "response": "Aspirin [1].", "seconds": 30}]))
    settings = Settings.model_validate({"home": str(tmp_path / "home"),
        "llm": {"backend": "mock", "mock_script": str(script), "cache": False}})  # fmt: skip
    rt = Runtime(settings, [index], embedder=hash_embedder)
    config = ServerConfig(index_paths=[index], max_concurrent_asks=2)
    yield create_app(settings, config, runtime=rt)
    rt.close()


def test_clients_that_hang_up_leave_no_slot_taken(slow_app):
    """Over a real connection (uvicorn on loopback): streams and plain asks whose clients hang
    up mid-answer (the model takes 30 s) free their slots at once."""
    import time

    from tests.serve.test_page_browser import _serving

    slots = slow_app.state.asker.slots
    body = {"question": "Does aspirin inhibit platelets?"}
    for url in _serving(slow_app):
        t0 = time.monotonic()
        for _ in range(4):  # twice the slots, each stream left after its first event
            with httpx.stream("POST", url + "/v1/ask", json={**body, "stream": True}) as r:
                assert r.status_code == 200
                next(r.iter_lines())
        for _ in range(2):  # plain asks whose client gives up waiting
            with pytest.raises(httpx.ReadTimeout):
                httpx.post(url + "/v1/ask", json=body, timeout=0.5)
        deadline = time.monotonic() + 5
        while slots.busy and time.monotonic() < deadline:
            time.sleep(0.05)
        assert slots.busy == 0 and slots.queued == 0
        assert time.monotonic() - t0 < 15  # not one of them waited for its 30 s answer
