"""Entity masking: consistent labels across question, options and passages."""

from __future__ import annotations

import json
from dataclasses import dataclass

import pytest

from biorag.extract.masking import (
    CATEGORIES,
    Entity,
    EntityMasker,
    canonical_category,
    mask_texts,
    rule_category,
    rule_entities,
)
from biorag.llm import LLM, MockBackend

TX = 'Text:\n<passage id="text">\n'  # the masked text's block opening, in mock rules


def test_thirteen_categories_and_their_spellings():
    assert len(CATEGORIES) == 13
    assert canonical_category("medical interventions") == "MedicalInterventions"
    assert canonical_category("GENE") == "Gene"
    assert canonical_category("Experimental_Technique") == "ExperimentalTechnique"
    assert canonical_category("Vegetable") == "OtherEntity"


def test_consistent_labels_longest_match_first_and_whole_words():
    texts = [
        "Does infliximab block TNF-alpha in rheumatoid arthritis?",
        "TNF-Alpha",
        "Infliximab binds tnf-alpha. Arthritis differs from rheumatoid arthritis. "
        "Antiarthritis agents and arthritises are different words.",
    ]
    entities = [
        Entity("TNF-alpha", "Gene"),
        Entity("arthritis", "Disease"),  # shorter form listed before the longer one
        Entity("rheumatoid arthritis", "Disease"),
        Entity("infliximab", "Chemical"),
    ]
    masked, mapping = mask_texts(texts, entities)
    assert masked == [
        "Does <Chemical1> block <Gene1> in <Disease1>?",
        "<Gene1>",
        "<Chemical1> binds <Gene1>. <Disease2> differs from <Disease1>. "
        "Antiarthritis agents and arthritises are different words.",
    ]
    # numbered per category in order of first occurrence, not of detection
    assert mapping == {
        "TNF-alpha": "<Gene1>",
        "arthritis": "<Disease2>",
        "rheumatoid arthritis": "<Disease1>",
        "infliximab": "<Chemical1>",
    }


def test_numbering_per_category_follows_first_occurrence():
    texts = ["IL6 and BRCA1 matter; aspirin too.", "BRCA1, IL6, TP53 and warfarin."]
    ents = [Entity("TP53", "Gene"), Entity("BRCA1", "Gene"), Entity("IL6", "Gene"),
            Entity("warfarin", "Chemical"), Entity("aspirin", "Chemical")]  # fmt: skip
    masked, mapping = mask_texts(texts, ents)
    assert masked == [
        "<Gene1> and <Gene2> matter; <Chemical1> too.",
        "<Gene2>, <Gene1>, <Gene3> and <Chemical2>.",
    ]
    assert mapping["TP53"] == "<Gene3>" and mapping["warfarin"] == "<Chemical2>"


def test_aliases_votes_whitespace_and_absent_entities():
    texts = ["Tumor necrosis factor (TNF) rises in type 2\ndiabetes.", "TNF again."]
    ents = [
        Entity("tumor necrosis factor", "Gene", ("TNF",)),
        Entity("TNF", "Chemical"),  # an alias already taken keeps its entity's label
        Entity("type 2 diabetes", "Chemical"),
        Entity("Type 2 Diabetes", "disease"),
        Entity("type 2 diabetes", "Disease"),  # Disease wins the vote 2 to 1
        Entity("never mentioned", "Organism"),  # occurs nowhere: no label, no number used
        Entity("  ", "Gene"),
    ]
    masked, mapping = mask_texts(texts, ents)
    assert masked == ["<Gene1> (<Gene1>) rises in <Disease1>.", "<Gene1> again."]
    assert mapping == {
        "tumor necrosis factor": "<Gene1>",
        "TNF": "<Gene1>",
        "type 2 diabetes": "<Disease1>",
    }
    assert mask_texts(["x"], []) == (["x"], {})


def test_regex_characters_in_forms_are_literal():
    masked, _ = mask_texts(["Levels of IL-1β (p < 0.05) and IL-1b."], [Entity("IL-1β", "Gene")])
    assert masked == ["Levels of <Gene1> (p < 0.05) and IL-1b."]
    masked, _ = mask_texts(["a C++ b"], [Entity("C++", "OtherEntity")])
    assert masked == ["a <OtherEntity1> b"]


def test_rule_floor_categories():
    assert rule_category("BRCA1") == "Gene"
    assert rule_category("atorvastatin") == "Chemical"
    assert rule_category("breast cancer") == "Disease"
    assert rule_category("5 mg") is None
    assert rule_category("12 weeks") is None
    assert rule_category("platelet aggregation") == "OtherEntity"
    assert rule_category("platelet aggregation", cue=False) is None
    ents = rule_entities("Patients received 5 mg of atorvastatin daily for 12 weeks.")
    assert ents == [Entity("atorvastatin", "Chemical")]
    ents = rule_entities("BRCA1 mutations raise the risk of breast cancer.")
    assert ents == [Entity("BRCA1", "Gene"), Entity("breast cancer", "Disease")]


async def test_floor_masker_masks_a_whole_item():
    masker = EntityMasker(None)
    assert masker.floor
    q, opts, passages, mapping = await masker.mask_item(
        "Does metformin lower HbA1c in type 2 diabetes?",
        {"A": "Yes, metformin does", "B": "No"},
        ["Metformin 500 mg reduces HbA1c in adults with type 2 diabetes after 12 weeks."],
    )
    assert q == "Does <Chemical1> lower <Gene1> in <Disease1>?"
    assert opts == {"A": "Yes, <Chemical1> does", "B": "No"}
    assert passages == [
        "<Chemical1> 500 mg reduces <Gene1> in adults with <Disease1> after 12 weeks."
    ]
    assert set(mapping.values()) == {"<Chemical1>", "<Gene1>", "<Disease1>"}


@dataclass
class Doc:
    chunk_id: str
    text: str


def llm_with(rules: list[dict]) -> tuple[LLM, MockBackend]:
    backend = MockBackend(rules=rules)
    return LLM(backend, retry_base_delay=0.0), backend


async def test_llm_masker_aligns_labels_across_texts():
    question_answer = {"entities": [
        {"text": "SGLT2", "category": "Gene"},
        {"text": "heart failure", "category": "Disease"},
        {"text": "empagliflozin", "type": "Chemical"},  # the paper's key name is accepted
    ]}  # fmt: skip
    passage_answer = {"entities": [
        {"text": "Empagliflozin", "category": "chemical", "mentions": ["EMPA"]},
        {"text": "HF", "category": "Disease"},
        {"text": "heart failure", "category": "Disease"},
    ]}  # fmt: skip
    llm, backend = llm_with(
        [
            {"stage": "mask_entities", "match": TX + "Which", "response": question_answer},
            {"stage": "mask_entities", "match": TX + "EMPA", "response": passage_answer},
        ]
    )
    masker = EntityMasker(llm)
    q, opts, passages, mapping = await masker.mask_item(
        "Which SGLT2 inhibitor helps in heart failure?",
        ["empagliflozin", "SGLT2 protein"],
        [Doc("c1", "EMPA (empagliflozin) reduced HF admissions; heart failure deaths fell.")],
    )
    assert not masker.floor and masker.stats["llm_texts"] == 2
    assert q == "Which <Gene1> inhibitor helps in <Disease1>?"
    assert opts == ["<Chemical1>", "<Gene1> protein"]
    assert passages == [
        Doc(
            "c1", "<Chemical1> (<Chemical1>) reduced <Disease2> admissions; <Disease1> deaths fell."
        )
    ]
    assert mapping["EMPA"] == mapping["empagliflozin"] == "<Chemical1>"
    assert mapping["HF"] == "<Disease2>"
    head = backend.calls[0].last_user_message()
    assert "Which SGLT2 inhibitor helps in heart failure?\nempagliflozin\nSGLT2 protein" in head


async def test_llm_masker_falls_back_to_the_floor_on_unusable_answers():
    llm, _ = llm_with([{"stage": "mask_entities", "response": "sorry, no JSON"}])
    masker = EntityMasker(llm)
    q, _, passages, _ = await masker.mask_item("Is aspirin useful?", None, ["Aspirin helps."])
    assert q == "Is <Chemical1> useful?" and passages == ["<Chemical1> helps."]
    assert masker.stats["fallbacks"] == 2


@pytest.mark.parametrize("payload", [{"entities": "x"}, {"other": []}, [1, 2]])
async def test_malformed_entity_lists_do_not_crash(payload):
    llm, _ = llm_with([{"stage": "mask_entities", "response": json.dumps(payload)}])
    masker = EntityMasker(llm)
    out = await masker.mask_item("Does warfarin bleed?", {}, [])
    assert out[0] == "Does <Chemical1> bleed?"


def test_preset_labels_stay_and_new_entities_number_after_them():
    preset = {"warfarin": "<Chemical2>", "aspirin": "<Chemical1>", "AF": "<Disease1>"}
    ents = [Entity("heparin", "Chemical"), Entity("atrial fibrillation", "Disease", ("AF",))]
    masked, mapping = mask_texts(
        ["Heparin or warfarin in atrial fibrillation (AF)?", "aspirin"], ents, preset=preset
    )
    # preset forms keep their labels whatever their order here; a mention of a preset form
    # makes its entity share the label; the new entity takes the next free number
    assert masked == ["<Chemical3> or <Chemical2> in <Disease1> (<Disease1>)?", "<Chemical1>"]
    assert mapping["heparin"] == "<Chemical3>" and mapping["atrial fibrillation"] == "<Disease1>"


async def test_mask_scope_searches_with_real_names_and_masks_what_it_finds():
    from biorag.extract.masking import MaskScope

    masker = EntityMasker()  # the floor
    q, _, _, mapping = await masker.mask_item("Does metformin lower HbA1c?", ["yes", "no"], [])
    scope = MaskScope(masker, mapping)
    assert "metformin" not in q.lower()
    assert scope.unmask(q) == "Does metformin lower HbA1c?"
    assert scope.unmask("a query with no labels") == "a query with no labels"
    docs = await scope.mask_passages(
        [Doc("c1", "Metformin and insulin lowered HbA1c."), "plain text, no entity"]
    )
    assert docs[0].chunk_id == "c1" and "etformin" not in docs[0].text
    assert mapping["metformin"] in docs[0].text
    assert docs[1] == "plain text, no entity"
