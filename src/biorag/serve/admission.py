"""Admission of asks: at most ``n`` answered at once, the others waiting their turn.

An ask that finds every slot taken waits in a bounded queue instead of being refused at once.
Slots are handed out in turn across clients (round-robin by API key, or by address without
keys), so one client with many asks cannot keep another's single ask waiting behind all of them.
A 503 (with ``Retry-After``) comes only when the queue is full or the wait passed ``max_wait``
seconds. A client that hangs up while waiting leaves the queue at once. A client that hangs up
while answered frees its slot at once: the asker cancels the answer (:mod:`biorag.serve.asking`).
Every call runs on the event loop.
"""

from __future__ import annotations

import asyncio
from collections import deque

from fastapi import HTTPException


class Admission:
    def __init__(self, n: int, max_queue: int = 64, max_wait: float = 30.0) -> None:
        self.n, self.busy = n, 0
        self.max_queue, self.max_wait = max_queue, max_wait
        # per client, its waiting asks in order; the dict's order is whose turn is next
        self._waiting: dict[str, deque[asyncio.Future[None]]] = {}
        self.queued = 0

    async def take(self, client: str = "") -> None:
        """Wait for a slot (at most ``max_wait`` s); a 503 when the queue is full or the wait
        runs out."""
        if self.busy < self.n and not self.queued:
            self.busy += 1
            return
        if self.queued >= self.max_queue:
            raise HTTPException(
                503, f"all {self.n} ask slots are busy and {self.queued} asks wait; retry "
                "shortly", {"Retry-After": "2"},
            )  # fmt: skip
        turn: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._waiting.setdefault(client, deque()).append(turn)
        self.queued += 1
        try:
            # asyncio.timeout, not wait_for: 3.11's wait_for returns the result when a cancel
            # meets a turn already handed over, and the cancelled caller would hold the slot
            async with asyncio.timeout(self.max_wait):
                await asyncio.shield(turn)
        except TimeoutError:
            if turn.done():  # handed a slot as the wait ran out: it is this ask's
                return
            self._leave(client, turn)
            raise HTTPException(
                503, f"no ask slot came free within {self.max_wait:g} s; retry shortly",
                {"Retry-After": "5"},
            ) from None  # fmt: skip
        except asyncio.CancelledError:  # the client left while waiting
            if turn.done():
                self.give()  # the slot it was just handed goes to the next in turn
            else:
                self._leave(client, turn)
            raise

    def give(self) -> None:
        """A slot is free: to the next waiting client in turn, else back to the pool."""
        while self._waiting:
            client = next(iter(self._waiting))
            queue = self._waiting.pop(client)
            turn = queue.popleft()
            self.queued -= 1
            if queue:
                self._waiting[client] = queue  # its next ask waits for its next turn
            if not turn.done():
                turn.set_result(None)
                return
        self.busy -= 1

    def _leave(self, client: str, turn: asyncio.Future[None]) -> None:
        queue = self._waiting.get(client)
        if queue is not None and turn in queue:
            queue.remove(turn)
            self.queued -= 1
            if not queue:
                del self._waiting[client]
