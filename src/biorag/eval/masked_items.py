"""``biorag eval --mask-entities``: the questions with their key entities masked (CLAIMS 4.4).

Each question, its answer options and its own passages are masked together by
:class:`~biorag.eval.masking.EntityMasker` (the LLM, or its rule floor without one), so an entity
has the same ``<Category><n>`` label in all of them; the gold letter is unchanged (options keep
their keys). A method then has to answer from the evidence rather than from what the model
knows about the named entities.

Only questions that carry their own passages can be masked this way (PubMedQA
``reasoning-required``, BioASQ ``snippets``, MASH-QA ``context``): passages retrieved from an
index at answer time are not masked, so a setting without given passages is refused.
"""

from __future__ import annotations

from typing import Any

from biorag.errors import BioragError

__all__ = ["mask_items"]


async def mask_items(items: list[Any], llm: Any | None) -> tuple[list[Any], dict[str, Any]]:
    """``items`` with question, options and context masked, and what was done (for
    ``metrics.json``): how many items and labels, and whether the rule floor did it."""
    from biorag.eval.masking import EntityMasker
    from biorag.util.progress import progress_bar

    bare = [it.id for it in items if not it.context]
    if bare:
        raise BioragError(
            f"--mask-entities masks each question with its own passages, and {len(bare)} "
            f"question(s) have none (first: {bare[0]}); use a setting that gives them "
            "(PubMedQA reasoning-required, BioASQ snippets, MASH-QA context)"
        )
    masker = EntityMasker(llm)
    out: list[Any] = []
    labels = 0
    bar = progress_bar(len(items), "masking entities", unit="question")
    try:
        for it in items:
            q, opts, ctx, mapping = await masker.mask_item(it.question, it.options, it.context)
            labels += len(set(mapping.values()))
            meta = {**it.meta, "masked_entities": len(set(mapping.values()))}
            out.append(it.model_copy(update={"question": q, "options": opts, "context": ctx,
                                             "meta": meta}))  # fmt: skip
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
