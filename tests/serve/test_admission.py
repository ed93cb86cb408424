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


def _slow_app(tmp_path, hash_embedder, index_of, seconds: float):
    """The app over one document, two ask slots, and a scripted model that answers after
    ``seconds``."""
    from biorag.config import Settings
    from biorag.runtime import Runtime
    from biorag.serve.app import ServerConfig, create_app

    index = index_of([{"id": "1", "text": "Aspirin inhibits platelets."}], "toy")
    script = tmp_path / "script.json"
    rule = {"stage": "answer", "response": "Aspirin [1].", "seconds": seconds}
    script.write_text(json.dumps([rule]))
    settings = Settings.model_validate({"home": str(tmp_path / "home"),
        "llm": {"backend": "mock", "mock_script": str(script), "cache": False}})  # fmt: skip
    rt = Runtime(settings, [index], embedder=hash_embedder)
    config = ServerConfig(index_paths=[index], max_concurrent_asks=2)
    return create_app(settings, config, runtime=rt), rt


async def test_a_wait_abandoned_as_its_slot_is_handed_over_passes_the_slot_on():
    """The race many hang-ups at once meet: a slot is handed to a queued ask in the same tick
    its wait is cancelled (its client found gone). The slot must go on (here: back to the
    pool), not stay taken by nobody (Python 3.11's wait_for let the cancel pass and the wait
    returned the slot)."""
    adm = Admission(1, max_queue=10, max_wait=5)
    await adm.take("a")
    waiting = asyncio.create_task(adm.take("b"))
    await asyncio.sleep(0.01)
    adm.give()  # a's slot is handed to b...
    waiting.cancel()  # ...as b's client is found gone
    await asyncio.gather(waiting, return_exceptions=True)
    assert waiting.cancelled()
    assert adm.busy == 0 and adm.queued == 0
    await adm.take("c")  # and the slot is there to take
    assert adm.busy == 1


@pytest.fixture
def slow_app(tmp_path, hash_embedder, index_of):
    app, rt = _slow_app(tmp_path, hash_embedder, index_of, 30)
    yield app
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


def test_clients_that_hang_up_while_queued_leave_the_queue(slow_app):
    """Both slots held by open streams; asks (streamed, plain, chat) that wait behind them and
    whose clients give up leave the queue at once, not when their wait runs out (30 s)."""
    import contextlib
    import time

    from tests.serve.test_page_browser import _serving

    slots = slow_app.state.asker.slots
    body = {"question": "Does aspirin inhibit platelets?"}

    def settled(check) -> bool:
        deadline = time.monotonic() + 5
        while not check() and time.monotonic() < deadline:
            time.sleep(0.05)
        return check()

    for url in _serving(slow_app):
        with contextlib.ExitStack() as held:
            reading = []  # each open stream's line reader: dropping one closes its stream
            for _ in range(2):
                r = held.enter_context(
                    httpx.stream("POST", url + "/v1/ask", json={**body, "stream": True})
                )
                reading.append(r.iter_lines())
                next(reading[-1])
            assert slots.busy == 2
            t0 = time.monotonic()
            chat = {"model": "retrieve-read", "stream": True,
                    "messages": [{"role": "user", "content": "Aspirin?"}]}  # fmt: skip
            for path, sent in (("/v1/ask", {**body, "stream": True}), ("/v1/ask", body),
                               ("/v1/chat/completions", chat)):  # fmt: skip
                with pytest.raises(httpx.ReadTimeout):
                    httpx.post(url + path, json=sent, timeout=0.5)
            assert settled(lambda: slots.queued == 0), slots.queued
            assert slots.busy == 2 and time.monotonic() - t0 < 15
            metrics = httpx.get(url + "/metrics").text
            assert "biorag_asks_queued 0.0" in metrics and "biorag_asks_in_flight 2.0" in metrics
        assert settled(lambda: slots.busy == 0)


async def test_an_ask_past_the_time_cap_is_stopped_and_frees_its_slot(tmp_path, slow_app):
    """Work per ask is capped in time as well as in k: past ``max_ask_seconds`` the answer is
    cancelled (the 30 s model request with it), a 504 or an ``ask_timeout`` event says why."""
    asker = slow_app.state.asker
    asker.max_seconds = 0.3
    transport = httpx.ASGITransport(app=slow_app, raise_app_exceptions=False)
    body = {"question": "Does aspirin inhibit platelets?"}
    async with httpx.AsyncClient(transport=transport, base_url="http://t", timeout=20) as c:
        r = await c.post("/v1/ask", json=body)
        assert r.status_code == 504, r.text
        err = r.json()["error"]
        assert err["type"] == "ask_timeout" and "--max-ask-seconds" in err["message"]
        r = await c.post("/v1/ask", json={**body, "stream": True})
        events = [line for line in r.text.splitlines() if line.startswith("event:")]
        assert events[-1] == "event: error" and '"ask_timeout"' in r.text
    assert asker.slots.busy == 0 and asker.slots.queued == 0


async def test_server_timing_tells_the_wait_for_a_slot_from_the_answer(
    tmp_path, hash_embedder, index_of
):
    """Two slots and three asks of 0.3 s: the third waits about one answer's length, and its
    Server-Timing header says so (queue), apart from its own answering (answer)."""
    import re

    app, rt = _slow_app(tmp_path, hash_embedder, index_of, 0.3)
    transport = httpx.ASGITransport(app=app, raise_app_exceptions=False)
    async with httpx.AsyncClient(transport=transport, base_url="http://t", timeout=60) as c:
        asks = [c.post("/v1/ask", json={"question": f"Does aspirin inhibit platelets {i}?"})
                for i in range(3)]  # fmt: skip
        replies = await asyncio.gather(*asks)
        streamed = await c.post("/v1/ask", json={"question": "Aspirin?", "stream": True})
    timings = []
    for r in replies:
        assert r.status_code == 200, r.text
        parts = dict(re.findall(r"(\w+);dur=([\d.]+)", r.headers["server-timing"]))
        timings.append((float(parts["queue"]), float(parts["answer"])))
    queues = sorted(q for q, _ in timings)
    assert queues[-1] >= 200 and queues[0] < 100  # ms: one waited for a slot, two did not
    assert all(a >= 250 for _, a in timings)
    assert streamed.headers["server-timing"].startswith("queue;dur=")
    rt.close()
