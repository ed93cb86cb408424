"""docs/benchmarks.md: ``biorag serve``'s admission queue under load with a client that does not
retry (``serve_load_queue*.json``, ``serve_load_model1s.json``), and streams hung up at once."""

from __future__ import annotations

from figures import figure, num, result, table

RUNS = (
    ("serve_load_queue.json", "no-LLM `claims`"),
    ("serve_load_queue_slots2.json", "no-LLM `claims`"),
    ("serve_load_model1s.json", "`retrieve-read`, scripted model 1 s"),
)
ABANDON = "serve_load_model1s.json"


def _s(x: float | None, digits: int = 2) -> str:
    return "–" if x is None else f"{num(x, digits)} s"


@figure("serve-queue")
def serve_queue() -> str:
    body = []
    for name, what in RUNS:
        r = result(name)
        codes = r["status_codes"]
        body.append([
            what, str(r["slots"]), f"{codes.get('200', 0):,}", f"{codes.get('503', 0):,}",
            str(r["errors"]), _s(r["p50_s"]), _s(r["p95_s"]), _s(r["queue_p95_s"]),
            f"{_s(r['answer_p50_s'])} / {_s(r['answer_p95_s'])}",
            "yes" if r["p95_within_2x_p50_plus_queue"] else "no",
            f"{num(r['asks_per_s'], 2)} asks/s",
        ])  # fmt: skip
    header = ["asks", "slots", "answered", "503", "errors", "p50", "p95", "queue p95",
              "answering p50 / p95", "p95 ≤ 2·p50 + queue p95", "throughput"]  # fmt: skip
    return table(header, body, "lrrrrrrrrll")


@figure("serve-abandon")
def serve_abandon() -> str:
    a = result(ABANDON)["abandon"]
    held, left = a["held_before_hang_up"], a["left_after"]
    return (
        f"{a['abandoned_streams']} streamed asks (a model that takes 60 s) held "
        f"{held['asks_in_flight']:.0f} slots and {held['asks_queued']:.0f} places in the queue; "
        f"{a['all_freed_within_s'] * 1000:.0f} ms after their clients hung up, "
        f"{left['asks_in_flight']:.0f} were in flight, {left['asks_queued']:.0f} queued and "
        f"{left['ask_slots_busy']:.0f} slots taken, and the next ask was answered "
        f"({a['next_ask_status']}) in {a['next_ask_s']:.2f} s"
    )


@figure("serve-queue-claims")
def serve_queue_claims() -> str:
    eight, two = result(RUNS[0][0]), result(RUNS[1][0])
    return (
        f"with {eight['slots']} slots the answering itself took {_s(eight['answer_p50_s'])} "
        f"(p50) to {_s(eight['answer_p95_s'])} (p95); with {two['slots']} slots, "
        f"{_s(two['answer_p50_s'])} to {_s(two['answer_p95_s'])}, the wait moving to the queue "
        f"(p95 {_s(two['queue_p95_s'])}) and the wall time the same "
        f"({eight['wall_s']:.0f} s and {two['wall_s']:.0f} s)"
    )
