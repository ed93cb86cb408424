"""VectorGraphRAG (seed 004): ranked KG triplets as the context of one LLM generation.

Options: ``kg`` (the KG directory, ``DIR/kg.sqlite``; required), ``backend`` (store backend,
default ``sqlite``; ``neo4j`` reads the triplets from the server ``neo4j_uri`` that ``kg push``
loaded, with ``neo4j_user``, ``neo4j_database``, ``neo4j_password_env``), ``k`` (10), ``top_n``
(300), ``min_entity_sim`` (0.9), ``min_triplet_sim`` (0.1), ``use_options`` (true),
``direction`` (``out``), ``paper_compat`` (false).

The entity index (``DIR/entities.*``) is opened once per method instance and extended with the
store's new entities, never rebuilt per question. Retrieval runs on one private worker thread
(the store and index are touched from that thread only). The reader gets the paper's prompt
structure (system prompt, then the evaluation instruction, the triplets as context, each a
``<passage id="n">`` block numbered by rank, the question, the options) and its answer is read
by regular expression (:func:`~biorag.answer.regex_extract.extract_letter_regex`).
``paper_compat`` adds, besides the
retrieval defects of :mod:`biorag.kg.retrieval`, the public code's reader defects: the system
prompt merged into the user turn, and its letter extraction with the ``[aA]answer`` typo
(:func:`extract_letter_paper`). Without an LLM the no-LLM floor answers over the triplet texts.
"""

from __future__ import annotations

import asyncio
import re
import threading
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from functools import cache
from pathlib import Path
from typing import Any, Literal, cast

from biorag.answer.floor import answer_without_llm
from biorag.answer.regex_extract import extract_letter_regex
from biorag.errors import BioragError
from biorag.extract.masking import EntityMasker, MaskScope
from biorag.kg.entity_index import EntityIndex
from biorag.kg.stores.factory import open_store
from biorag.llm import budget
from biorag.llm.evidence import numbered_passages
from biorag.llm.prompts import PromptTemplate
from biorag.llm.types import ChatRequest
from biorag.methods import dry_replies as _dry_replies  # noqa: F401 - registers its dry-run answers
from biorag.methods.base import Answer, AnswerSentence, Evidence, QAMethod, Question
from biorag.methods.details import KGTripletDetails, MatchedEntity, RankedTriplet
from biorag.methods.exact_step import with_exact
from biorag.methods.stages import stage

STAGE = "kg_answer"
TASK_MC = "Answer it by choosing the correct option."
TASK_OPEN = "Answer it briefly."
NO_CONTEXT = "(no matching facts in the knowledge graph)"


@cache
def _template() -> PromptTemplate:
    return PromptTemplate.load("biorag.kg.prompts", "kg_answer")


def _bool(value: Any) -> bool:
    if isinstance(value, str):
        return value.strip().lower() in ("1", "true", "yes", "on")
    return bool(value)


def extract_letter_paper(
    text: str | None, options: Mapping[str, str], typo: bool = True
) -> str | None:
    """The public code's letter extraction, reproduced (``None`` for its ``'No match'``).

    In order, the first applicable branch decides: a reply under 4 characters -> a standalone
    letter in it (or nothing); the reply equal to an option line ``"B. text"`` -> its letter;
    ``[aA]answer( is)?[:.]?\\s?(\\*+)?['"]?[(]?\\s?<letter>\\b`` -> that letter (with ``typo``
    the pattern needs "aanswer", so this branch never fires on "the answer is B"); the letter
    most often followed by one of ``.:)'"(*+`` -> it (the first such on ties); else the first
    option whose text occurs in the reply (case-insensitively).
    """
    if not text:
        return None
    answer = " ".join(text.split())
    letters = "".join(re.escape(k) for k in options)
    if not letters:
        return None
    lines = [f"{k}. {v}" for k, v in options.items()]
    if len(answer) < 4:
        m = re.search(rf"\b[{letters}]\b", answer)
        return m.group(0) if m else None
    if answer in lines:
        return answer[0]
    word = "[aA]answer" if typo else "[aA]nswer"
    m = re.search(rf"{word}( is)?[:.]?\s?(\*+)?['\"]?[\(]?\s?[{letters}]\b", answer)
    if m:
        return m.group(0)[-1]
    found = [x[0] for x in re.findall(rf"\b[{letters}][.:\)'\"(\*+)]", answer)]
    if found:
        return max(found, key=found.count)
    low = answer.lower()
    return next((k for k, v in options.items() if v.lower() in low), None)


SERVER_OPTIONS = ("uri", "user", "database", "password_env")
_SHARED: dict[tuple[str, str, str, str], tuple[Any]] = {}
_SHARED_LOCK = threading.Lock()
_POOL = ThreadPoolExecutor(max_workers=1, thread_name_prefix="vectorgraphrag")


def _open_retriever(
    path: Path, backend: str, server: dict[str, Any], embedder: Any, params: dict[str, Any]
) -> Any:
    """Open the store and entity index on the worker thread, where they are used. With backend
    ``neo4j`` the triplets are read from the server (``server``: ``uri`` and the store's keyword
    arguments) and the entity index from ``path``, the directory ``kg push`` pushed."""

    def open_() -> Any:
        from biorag.kg.retrieval import KGRetriever  # lazy: kg.retrieval loads sklearn and pandas

        if backend == "neo4j":
            kw = {k: v for k, v in server.items() if k != "uri" and v}
            store = open_store(server["uri"], "neo4j", **kw)
        else:
            # cast: the option is a plain str; open_store refuses any other backend name
            store = open_store(path, backend=cast(Literal["sqlite", "neo4j"], backend))
        index = EntityIndex.open(path if path.is_dir() else path.parent, embedder)
        index.sync(store.entities())
        return KGRetriever(store, index, embedder, **params)

    if threading.current_thread().name.startswith("vectorgraphrag"):
        return open_()  # already on the worker (the usual path: answer -> _retrieve -> _setup)
    return _POOL.submit(open_).result()


class VectorGraphRAG(QAMethod):
    """Ranked retrieval of KG triplets, then one LLM generation (see the module docstring)."""

    name = "vectorgraphrag"
    needs_index = False

    def __init__(self, runtime: Any, **options: Any):
        super().__init__(runtime, **options)
        o = self.options
        self.paper_compat = _bool(o.get("paper_compat", False))
        self.params = {
            "k": int(o.get("k", 10)),
            "top_n": int(o.get("top_n", 300)),
            "min_entity_sim": float(o.get("min_entity_sim", 0.9)),
            "min_triplet_sim": float(o.get("min_triplet_sim", 0.1)),
            "use_options": _bool(o.get("use_options", True)),
            "direction": str(o.get("direction", "out")),
            "paper_compat": self.paper_compat,
        }
        self._retriever: Any | None = None
        self._pool = _POOL

    def kg_dir(self) -> Path:
        path = self.options.get("kg")
        if not path:
            raise BioragError(
                "vectorgraphrag needs a knowledge graph directory (method option kg)",
                param="kg",
            )
        p = Path(path)
        if not p.exists():
            raise BioragError(f"{p}: no such knowledge-graph directory", param="kg")
        return p

    def _setup(self) -> Any:
        """The retriever over this KG, opened once per process and shared by every instance
        with the same KG, backend, embedder and parameters (the evaluation runner builds one
        method per question). SQLite stays on the one worker thread that opened it."""
        if self._retriever is None:
            path = self.kg_dir()
            backend = str(self.options.get("backend", "sqlite"))
            server = {k: self.options.get(f"neo4j_{k}") for k in SERVER_OPTIONS}
            server["uri"] = server["uri"] or ""
            if backend == "neo4j" and not server["uri"]:
                raise BioragError(
                    "vectorgraphrag with backend neo4j needs the server: method option "
                    "neo4j_uri (bolt://host:7687), after biorag kg push",
                    param="neo4j_uri",
                )
            embedder = self.rt.embedder
            key = (
                str(path.resolve()),
                f"{backend}:{server['uri']}:{server['database']}",
                embedder.model_id,
                repr(sorted(self.params.items())),
            )
            with _SHARED_LOCK:
                shared = _SHARED.get(key)
                if shared is None:
                    shared = _SHARED[key] = (
                        _open_retriever(path, backend, server, embedder, self.params),
                    )
            self._retriever = shared[0]
        return self._retriever

    def _retrieve(self, question: Question) -> Any:
        text, options = question.text, list(question.options.values())
        if question.mask_mapping is not None:  # search the KG with the real names
            scope = self._mask_scope(question)
            text, options = scope.unmask(text), [scope.unmask(o) for o in options]
        return self._setup().retrieve(text, options)

    def _mask_scope(self, question: Question) -> Any:

        return MaskScope(EntityMasker(self.rt.llm), question.mask_mapping or {})

    def request(self, question: Question, triplets: Sequence[str]) -> ChatRequest:
        """The reader's request: the ranked triplet texts as passage blocks numbered from 1."""
        tpl = _template()
        opts = question.options_block()
        context = numbered_passages(triplets)
        values: dict[str, Any] = {
            "task": TASK_MC if question.options else TASK_OPEN,
            "context": context if context or self.paper_compat else NO_CONTEXT,
            "question": question.text.strip(),
            "options": f"Options:\n{opts}" if opts else "",
        }
        messages = tpl.messages(**values)
        if self.paper_compat:  # the public code merged the system prompt into the user turn
            merged = "\n\n".join(m["content"].strip() for m in messages)
            messages = [{"role": "user", "content": merged}]
        return ChatRequest(
            messages=messages,
            stage=STAGE,
            template_version=tpl.version,
            max_tokens=budget.READ_REASONING,
        )

    async def answer(self, question: Question) -> Answer:
        loop = asyncio.get_running_loop()
        with stage("retrieve triplets"):
            result = await loop.run_in_executor(self._pool, self._retrieve, question)
        ranked = result.triplets
        texts = [t.text() for t, _ in ranked]
        if question.mask_mapping is not None:  # the model sees them masked like its question
            texts = await self._mask_scope(question).mask_passages(texts)
        evidence = [
            Evidence(kind="triplet", rank=i, subject=t.subject, predicate=t.predicate,
                     object=t.object, text=text, score=s, source_id=t.source_id or "",
                     model=t.model)
            for i, ((t, s), text) in enumerate(zip(ranked, texts, strict=True), 1)
        ]  # fmt: skip
        details = KGTripletDetails(
            search_terms=result.terms,
            matched_entities=[
                MatchedEntity(term=a, entity=e, similarity=s) for a, e, s in result.matched_entities
            ],
            triplets=[
                RankedTriplet(subject=t.subject, predicate=t.predicate, object=t.object, score=s)
                for t, s in ranked
            ],
            params=self.params,
        )
        base: dict[str, Any] = {
            "method": self.name,
            "question_id": question.id,
            "evidence": evidence,
            "context": "\n".join(texts),
            "details": details,
        }
        llm = self.rt.llm
        if llm is None:
            # cited as evidence is keyed (methods.base.evidence_key): triplet:<rank>
            passages = [(f"triplet:{i}", text) for i, text in enumerate(texts, 1)]
            res = await loop.run_in_executor(
                self._pool,
                answer_without_llm,
                question.text,
                question.options,
                passages,
                self.rt.embedder,
            )
            floor = Answer(
                **base,
                answer=res.answer,
                answer_text=res.answer_text,
                sentences=[AnswerSentence(text=s, chunk_ids=[c]) for s, c in res.sentences],
                notes=[
                    "no-LLM floor over the KG triplets (configure [llm] for a reader)",
                    res.rationale,
                ],
            )
            return await with_exact(self.rt, question, floor, texts)
        resp = await llm.chat(self.request(question, texts))
        raw = resp.text
        if not question.options:  # open: the triplets' free-text answer, and its exact answer
            ans = Answer(
                **base, answer=raw.strip(), answer_text=raw.strip(), raw_output=raw, llm_used=True
            )
            return await with_exact(self.rt, question, ans, texts)
        if self.paper_compat:
            letter = extract_letter_paper(raw, question.options)
        else:
            letter = extract_letter_regex(raw, list(question.options), question.options)
        return Answer(
            **base,
            answer=letter or "",
            answer_text=question.options.get(letter, "") if letter else "",
            raw_output=raw,
            parse_failed=letter is None,
            llm_used=True,
        )
