"""docs/testing.md: where `make test`'s time goes, one block per recorded run
(``<!-- figure:test_timings/LABEL -->`` from ``test_timings_LABEL.json``)."""

from __future__ import annotations

from figures import family, result
from figures.timing_tables import table


@family("test_timings")
def test_timings(label: str) -> str:
    return table(result(f"test_timings_{label}.json"))
