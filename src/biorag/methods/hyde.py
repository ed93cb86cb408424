"""HyDE: question, options and a hypothetical answer retrieve chunks; reranked, they fill the
context (section 4.2).

"The question, answer options, and candidate answer are used to retrieve unstructured
documents. The retrieved documents are reranked and added to the model's context window up to
the context limit." The query is ``build_query(rewrite=False, hyde=True)``: the question, the
options' texts and the LLM's candidate answer with its explanation (no LLM: the question and the
options). Everything after the query is :class:`~biorag.methods.rewrite.RerankedChunks`.
"""

from __future__ import annotations

from biorag.methods.rewrite import RerankedChunks


class HyDE(RerankedChunks):
    """The HyDE baseline. Options: ``biorag.methods.rewrite.CHUNK_DEFAULTS``."""

    name = "hyde"
    hyde = True
