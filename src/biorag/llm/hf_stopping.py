"""When in-process generation stops early: at a stop string, or at the onset of a loop.

transformers' ``stop_strings`` needs a well-behaved vocabulary; this criterion decodes the
continuation instead, so it works with any tokenizer. With ``watch_loops`` it also checks the
continuation for a degenerate loop (:func:`~biorag.llm.repetition.find_loop`) every
:data:`LOOP_CHECK_EVERY` tokens and stops there, as the server path closes its stream
(:mod:`biorag.llm.openai.streaming`); ``looped`` then says so.
"""

from __future__ import annotations

from typing import Any

from biorag.llm.repetition import find_loop

#: generated tokens between two loop checks
LOOP_CHECK_EVERY = 32


class EarlyStop:
    """A transformers stopping criterion (one prompt per call, as :class:`HFBackend` runs)."""

    def __init__(self, tok: Any, n_prompt: int, stops: list[str], watch_loops: bool) -> None:
        self.tok = tok
        self.n_prompt = n_prompt
        self.stops = stops
        self.watch_loops = watch_loops
        self.looped = False
        self._checked = 0

    def criteria(self) -> Any:
        """The ``stopping_criteria`` argument of ``generate``."""
        import torch
        from transformers import StoppingCriteria, StoppingCriteriaList

        outer = self

        class _Stop(StoppingCriteria):
            def __call__(self, input_ids: Any, scores: Any, **kwargs: Any) -> Any:
                done = [outer._done(row[outer.n_prompt :]) for row in input_ids.tolist()]
                return torch.tensor(done, dtype=torch.bool, device=input_ids.device)

        return StoppingCriteriaList([_Stop()])

    def _done(self, new_ids: list[int]) -> bool:
        text: str | None = None
        if self.stops:
            text = self.tok.decode(new_ids, skip_special_tokens=True)
            if any(s in text for s in self.stops):
                return True
        if self.watch_loops and len(new_ids) - self._checked >= LOOP_CHECK_EVERY:
            self._checked = len(new_ids)
            if text is None:
                text = self.tok.decode(new_ids, skip_special_tokens=True)
            if find_loop(text) is not None:
                self.looped = True
                return True
        return False
