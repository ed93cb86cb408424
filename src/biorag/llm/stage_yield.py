"""The yield of an LLM stage: how many inputs gave usable output, and a loud warning when few did.

A small model that ignores the answer format costs the full token budget and gives nothing: a
BioStrataKG build over 20 papers ended with one usable triplet, and nothing said so. Every build
(``biorag kg build``, ``biorag strata build``) and the CLAIMS extraction therefore count, per LLM
stage, the inputs sent, those whose answer gave at least one usable output, the outputs in all
and the inputs that fell back to the no-LLM floor (:class:`StageYield`; ``to_dict()`` is what
the build reports and ``--json`` outputs carry). When fewer than :data:`LOW_YIELD` of the inputs
gave usable output, :func:`warn_if_low` logs a WARNING (on stderr) naming the stage, the numbers
and what to try.
"""

from __future__ import annotations

import logging
import threading
from dataclasses import dataclass
from typing import Any

log = logging.getLogger(__name__)

#: below this share of inputs with usable output a stage's yield is reported as low
LOW_YIELD = 0.2

_WARNED: set[str] = set()
_LOCK = threading.Lock()


@dataclass
class StageYield:
    """Inputs, usable inputs, outputs and floor fallbacks of one LLM stage.

    ``usable``: inputs whose answer gave at least one usable output; ``outputs``: the usable
    outputs in all (triplets, claims, ...); ``fallbacks``: inputs that got the no-LLM floor's
    output instead (a failed call or an unusable answer, where the stage has a floor).
    """

    stage: str
    inputs: int = 0
    usable: int = 0
    outputs: int = 0
    fallbacks: int = 0
    unit: str = "inputs"
    output_unit: str = "outputs"

    @property
    def usable_share(self) -> float:
        return self.usable / self.inputs if self.inputs else 0.0

    @property
    def fallback_share(self) -> float:
        return self.fallbacks / self.inputs if self.inputs else 0.0

    @property
    def outputs_per_input(self) -> float:
        return self.outputs / self.inputs if self.inputs else 0.0

    def is_low(self, threshold: float = LOW_YIELD) -> bool:
        """True when the stage had inputs and fewer than ``threshold`` of them gave usable
        output."""
        return self.inputs > 0 and self.usable_share < threshold

    def to_dict(self) -> dict[str, Any]:
        return {
            "stage": self.stage,
            "inputs": self.inputs,
            "usable": self.usable,
            "outputs": self.outputs,
            "fallbacks": self.fallbacks,
            "usable_share": round(self.usable_share, 4),
            "fallback_share": round(self.fallback_share, 4),
            "outputs_per_input": round(self.outputs_per_input, 4),
            "low": self.is_low(),
            "unit": self.unit,
            "output_unit": self.output_unit,
        }

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> StageYield:
        """The yield back from :meth:`to_dict` (derived keys are ignored)."""
        keys = ("stage", "inputs", "usable", "outputs", "fallbacks", "unit", "output_unit")
        return cls(**{k: d[k] for k in keys if k in d})

    def describe(self) -> str:
        """One line: ``stage: 3 of 20 papers usable (15%), 4 triplets (0.20 per input), 17 fell
        back to the no-LLM floor (85%)``."""
        text = (
            f"{self.stage}: {self.usable} of {self.inputs} {self.unit} usable "
            f"({self.usable_share:.0%}), {self.outputs} {self.output_unit} "
            f"({self.outputs_per_input:.2f} per input)"
        )
        if self.fallbacks:
            text += f", {self.fallbacks} fell back to the no-LLM floor ({self.fallback_share:.0%})"
        return text


def describe_yields(yields: dict[str, dict[str, Any]]) -> list[str]:
    """One line per stage of a report's ``llm_yield`` (see :meth:`StageYield.describe`)."""
    return [StageYield.from_dict(d).describe() for d in yields.values()]


def warn_if_low(
    y: StageYield,
    *,
    threshold: float = LOW_YIELD,
    once: bool = False,
    logger: logging.Logger | None = None,
) -> bool:
    """Log a WARNING when ``y`` is low (see :meth:`StageYield.is_low`); returns whether it was.

    ``once``: warn at most once per process for this stage (for stages that run per question,
    such as the CLAIMS extraction; later low yields are logged at DEBUG)."""
    if not y.is_low(threshold):
        return False
    logger = logger or log
    if once:
        with _LOCK:
            first = y.stage not in _WARNED
            _WARNED.add(y.stage)
        if not first:
            logger.debug("low yield again: %s", y.describe())
            return True
    logger.warning(
        "LOW YIELD of LLM stage %s; under %.0f%% of the %s gave usable output. The model "
        "probably does not follow the answer format (small models often loop or ramble): try a "
        "bigger model, or a server with structured output (llm.structured_output = "
        '"json_schema"); per-stage calls, tokens and loops cut are in the accounting.',
        y.describe(),
        100 * threshold,
        y.unit,
    )
    return True


def reset_warnings() -> None:
    """Forget which stages were warned about (tests)."""
    with _LOCK:
        _WARNED.clear()
