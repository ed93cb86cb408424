"""The one way to answer a question: :func:`ask`.

Every door calls it: ``biorag ask`` (the CLI), :meth:`biorag.BioRAG.ask` (the Python API),
``POST /v1/ask`` and ``/v1/chat/completions`` (the service), ``biorag eval`` (in this process
and on the executor's workers) and ``biorag eval components``. So a question answered through
any of them takes the same road: the method built and its options checked the same way
(:func:`~biorag.methods.registry.build_method`), an LLM client of its own from the runtime's
one shared model (:meth:`~biorag.runtime.Runtime.for_question`: the same middleware chain for
every door), and the same answer with its whole trace and its own token accounting.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import ExitStack, contextmanager
from typing import Any

from biorag.corpus.datasets.base import Question
from biorag.errors import BioragError
from biorag.llm.accounting import Accounting
from biorag.llm.stream_sink import stream_answers_to
from biorag.methods.base import Answer
from biorag.methods.registry import build_method
from biorag.methods.stages import report_stages
from biorag.retrieve.exclusion import DocExclusion
from biorag.runtime import Runtime

log = logging.getLogger(__name__)

__all__ = ["EventSink", "PreparedAsk", "ask", "listening", "prepare"]

#: Hears an ask's events: ``("stage", {...})`` when a method step starts, ends or fails, and
#: ``("token", {"text": ...})`` for each piece of answer text a streaming model writes.
EventSink = Callable[[str, dict[str, Any]], None]


async def ask(
    rt: Runtime,
    question: Question,
    method: str = "retrieve-read",
    options: Mapping[str, Any] | None = None,
    *,
    on_event: EventSink | None = None,
    exclude_docs: Iterable[str] | DocExclusion | None = None,
) -> Answer:
    """Answer ``question`` with ``method`` (its ``options`` checked against the method's
    allowed options) on ``rt``; ``exclude_docs``: documents (content ids or source ids, such
    as the question's own PMID) that none of the method's searches may return (a
    :class:`~biorag.retrieve.exclusion.DocExclusion` also counts them; ``drop=False`` only
    counts).

    The answer carries its whole trace: ``details`` (the method's typed trace, with the context
    fitting of every prompt), ``notes``, ``accounting`` (this answer's LLM calls and tokens per
    stage and its wall-clock seconds, also added to ``rt.accounting()``) and, in memory,
    :attr:`~biorag.methods.base.Answer.trace` (e.g. CLAIMS' graph). Raises
    :class:`~biorag.errors.BioragError` for an unknown method, a bad option or a method that
    retrieves evidence with no index and no given passages.
    """
    return await prepare(rt, question, method, options, exclude_docs=exclude_docs).run(on_event)


class PreparedAsk:
    """An ask checked and ready to run (:func:`prepare`): the service checks an ask, and
    answers a bad one at once, before it takes a slot or opens a stream."""

    def __init__(
        self,
        rt: Runtime,
        question: Question,
        method: str,
        options: Mapping[str, Any] | None,
        exclude_docs: Iterable[str] | DocExclusion | None = None,
    ) -> None:
        self.rt, self.question, self.method = rt, question, method
        self.accounting = Accounting()
        self._ran = False
        #: the documents this ask's searches leave out, and what they met of them
        self.exclusion: DocExclusion | None = (
            exclude_docs
            if isinstance(exclude_docs, DocExclusion) or exclude_docs is None
            else DocExclusion.of(exclude_docs)
        )
        child = rt.for_question(self.accounting, self.exclusion)
        self.child = child
        self.qa = build_method(method, child, options)
        answer_settings = rt.settings.answer
        if (
            answer_settings.verify != "off"
            and answer_settings.verifier == "llm"
            and rt.settings.llm.backend == "none"
        ):
            raise BioragError(
                'answer.verifier = "llm" needs a model: set [llm] backend, or use '
                'answer.verifier = "rules" (or "auto")'
            )
        if self.qa.needs_index and not rt.index_paths and not question.passages:
            raise BioragError(
                f"method {method!r} retrieves evidence and no index was given: name an index "
                "directory (biorag ask --index DIR, BioRAG(index), biorag serve --index DIR)"
            )

    async def run(self, on_event: EventSink | None = None) -> Answer:
        """The answer (once: an ask runs one time)."""
        if self._ran:
            raise RuntimeError("this ask has run; prepare another")
        self._ran = True
        try:
            with self.accounting.run(), listening(on_event):
                answer = await self.qa.answer(self.question)
                await self._verify(answer)
        finally:
            self.rt.record(self.accounting)
        answer.accounting = self.accounting.report()
        ex = self.exclusion
        if ex is not None and ex.drop and ex.hits:
            answer.notes.append(
                f"{ex.hits} retrieved passage(s) of excluded documents "
                f"({', '.join(sorted(ex.found))}) left out of the context"
            )
        return answer

    async def _verify(self, answer: Answer) -> None:
        """Check the answer's sentences against their passages (``answer.verify``). A check
        that fails is no failed answer: the answer is kept, unchecked, with a note."""
        settings = self.child.settings.answer
        if settings.verify == "off" or not answer.sentences:
            return
        from biorag.llm.budget import estimate_tokens
        from biorag.methods.stages import stage
        from biorag.verify.check import verify_answer

        # the size of what the answer was read from, not its accounted tokens: those are 0
        # for cached calls, and a rerun must pick the same verifier
        size = estimate_tokens(answer.context) + estimate_tokens(self.question.text)
        try:
            with stage("verify"):
                await verify_answer(
                    answer, settings, lambda: self.child.embedder, self.child.llm, size
                )
        except Exception as e:
            log.warning("verifying the answer's sentences failed: %s", e)
            answer.verification = None
            for s in answer.sentences:
                s.support = None
            answer.notes.append(f"the sentences could not be checked ({type(e).__name__}: {e})")


def prepare(
    rt: Runtime,
    question: Question,
    method: str = "retrieve-read",
    options: Mapping[str, Any] | None = None,
    *,
    exclude_docs: Iterable[str] | DocExclusion | None = None,
) -> PreparedAsk:
    """The ask of :func:`ask`, checked (the same errors) and not yet run."""
    return PreparedAsk(rt, question, method, options, exclude_docs)


@contextmanager
def listening(on_event: EventSink | None) -> Iterator[None]:
    """Route a method's stage events and streamed answer text to ``on_event`` (if any)."""
    if on_event is None:
        yield
        return
    sink = on_event
    with ExitStack() as stack:
        stack.enter_context(report_stages(lambda e: sink("stage", e)))
        stack.enter_context(stream_answers_to(lambda t: sink("token", {"text": t})))
        yield
