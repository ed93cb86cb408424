from biorag.answer.floor import answer_without_llm, mmr

YN = {"A": "yes", "B": "no", "C": "maybe"}


def test_yes_no_follows_negation_in_relevant_sentences(hash_embedder):
    passages = [
        (
            "c1",
            "Vitamin D supplementation did not reduce fracture risk. No significant effect "
            "of vitamin D on fracture risk was found in adults.",
        ),
        ("c2", "Unrelated sentence about statins and cholesterol."),
    ]
    res = answer_without_llm("Does vitamin D reduce fracture risk?", YN, passages, hash_embedder)
    assert res.answer == "B" and res.answer_text == "no"
    assert all(cid in {"c1", "c2"} for _, cid in res.sentences)


def test_yes_when_evidence_is_affirmative(hash_embedder):
    passages = [("c1", "Metformin reduces hepatic glucose production in type 2 diabetes.")]
    res = answer_without_llm(
        "Does metformin reduce glucose production?", YN, passages, hash_embedder
    )
    assert res.answer == "A"


def test_multiple_choice_prefers_supported_option(hash_embedder):
    passages = [("c1", "Atorvastatin lowers LDL cholesterol in adults with hypercholesterolemia.")]
    opts = {"A": "insulin", "B": "atorvastatin", "C": "penicillin", "D": "warfarin"}
    res = answer_without_llm("Which drug lowers LDL cholesterol?", opts, passages, hash_embedder)
    assert res.answer == "B"
    assert res.scores["B"] > max(res.scores[k] for k in "ACD")


def test_free_text_cites_chunks(hash_embedder):
    passages = [
        ("c1", "Aspirin inhibits platelet aggregation. It is given after myocardial infarction."),
        ("c2", "Vitamin D showed no effect on fractures."),
    ]
    res = answer_without_llm(
        "What does aspirin inhibit?", {}, passages, hash_embedder, top_sentences=2
    )
    assert "platelet" in res.answer
    assert {cid for _, cid in res.sentences} <= {"c1", "c2"}


def test_no_context():
    res = answer_without_llm("q?", {"A": "x"}, [], embedder=None)
    assert res.answer == "A" and "no context" in res.rationale


def test_mmr_avoids_duplicates():
    import numpy as np

    q = np.array([1.0, 0.0, 0.0])
    c = np.array([[0.9, 0.436, 0], [0.9, 0.436, 0], [0.7, 0, 0.714]], dtype=float)
    assert mmr(q, c, 2, lam=0.5) == [0, 2]
