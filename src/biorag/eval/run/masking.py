"""``biorag eval --mask-entities``: the questions with their key entities masked (CLAIMS 4.4).

Each question, its answer options and its own passages are masked together by
:class:`~biorag.extract.masking.EntityMasker` (the LLM, or its rule floor without one), so an entity
has the same ``<Category><n>`` label in all of them; the gold letter is unchanged (options keep
their keys). A method then has to answer from the evidence rather than from what the model
knows about the named entities.

A question without passages of its own (MMLU, MedQA, any ``open`` setting) is masked with its
options here, and its ``{form: label}`` mapping goes with it (``mask_mapping``): the
methods search with the real names and mask what they retrieve with the question's labels
(:class:`~biorag.extract.masking.MaskScope`), as the paper masked the retrieved documents: those
that search through :func:`~biorag.methods.base.retrieve_passages`, and IP-RAR (its levels'
queries) and VectorGraphRAG (its KG search; the triplets' texts are masked) in their own search.
"""

from __future__ import annotations

from typing import Any

from biorag.extract.masking import EntityMasker
from biorag.llm.base import ChatModel
from biorag.util.progress import progress_bar

__all__ = ["mask_items"]


async def mask_items(items: list[Any], llm: ChatModel | None) -> tuple[list[Any], dict[str, Any]]:
    """``items`` with question, options and context masked, and what was done (for
    ``metrics.json``): how many items and labels, and whether the rule floor did it."""
    masker = EntityMasker(llm)
    out: list[Any] = []
    labels = 0
    bar = progress_bar(len(items), "masking entities", unit="question")
    try:
        for it in items:
            q, opts, ctx, mapping = await masker.mask_item(it.question, it.options, it.context)
            labels += len(set(mapping.values()))
            meta = {**it.meta, "masked_entities": len(set(mapping.values()))}
            # without passages of its own, retrieval masks what it finds with these labels
            masks = None if it.context else mapping
            out.append(it.model_copy(update={"text": q, "options": opts, "passages": ctx,
                                             "meta": meta, "mask_mapping": masks}))  # fmt: skip
            bar.update(1)
    finally:
        bar.close()
    stats = {
        "items": len(out),
        "labels": labels,
        "floor": masker.floor,
        "llm_texts": masker.stats.get("llm_texts", 0),
        "fallbacks": masker.stats.get("fallbacks", 0),
    }
    return out, stats
