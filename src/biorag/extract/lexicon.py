"""Word lists for the no-LLM extract operators: function words, verbs and their inflections,
biomedical cue words (drug suffixes, disease words, units) and reference-class nouns.

Verbs are listed by their base form; :func:`inflections` generates the regular forms (3rd person
singular, past/participle, gerund) and :data:`IRREGULAR` adds the irregular ones. The lists are
deliberately small and readable: the operators that use them are a floor, not a parser.
"""

from __future__ import annotations

DETERMINERS = frozenset(
    "a an the this these that those such some any each every no all both either neither "
    "another other its their his her our your my several many few most more less".split()
)
PREPOSITIONS = frozenset(
    "of in on at to for from by with without within into onto over under between among during "
    "after before via versus vs than per across through throughout against toward towards "
    "despite upon about around beyond following including like unlike regarding".split()
)
CONJUNCTIONS = frozenset(
    "and or but nor whereas while although though because since unless if whether when where "
    "which who whom whose that so yet as then thus hence however therefore".split()
)
PRONOUNS = frozenset(
    "it its itself they them their theirs themselves he him his she her hers we us our you i "
    "this these those one".split()
)
AUXILIARIES = frozenset(
    "is are was were be been being am has have had having do does did can could may might must "
    "shall should will would".split()
)
BE_FORMS = frozenset("is are was were be been being am".split())
MODALS = frozenset("can could may might must shall should will would".split())
DO_FORMS = frozenset("do does did".split())
NEGATIONS = frozenset("not n't never no".split())
ADVERBS = frozenset(
    "also further still often usually generally consistently markedly strongly only even "
    "then thus therefore moreover additionally however indeed directly independently "
    "partially partly fully largely mainly primarily twice once thrice".split()
)
QUANTIFIERS = frozenset("one two three four five six seven eight nine ten first second".split())
#: Adjectives that often precede a noun use of a verb base ("a significant increase").
ADJECTIVE_CUES = frozenset(
    "significant marked slight greater higher lower small large modest overall mean median net "
    "dramatic substantial sharp rapid gradual further major minor strong weak".split()
)
ADJECTIVE_SUFFIXES = ("al", "ant", "ent", "ive", "ous", "ic", "ful", "able", "ible", "ary", "ar")
STRICT_ADJECTIVE_SUFFIXES = ("ous", "ful", "able", "ible", "ar")

STOPWORDS = DETERMINERS | PREPOSITIONS | CONJUNCTIONS | PRONOUNS | AUXILIARIES | NEGATIONS

#: Verbs whose forms are predicates in the pattern triple extractor (base form -> particle that
#: belongs to the predicate, or "" for none).
PREDICATE_VERBS: dict[str, str] = {
    "increase": "",
    "reduce": "",
    "decrease": "",
    "lower": "",
    "raise": "",
    "elevate": "",
    "inhibit": "",
    "activate": "",
    "cause": "",
    "induce": "",
    "treat": "",
    "prevent": "",
    "associate": "with",
    "correlate": "with",
    "predict": "",
    "bind": "to",
    "express": "",
    "regulate": "",
    "upregulate": "",
    "downregulate": "",
    "improve": "",
    "worsen": "",
    "block": "",
    "suppress": "",
    "enhance": "",
    "promote": "",
    "stimulate": "",
    "attenuate": "",
    "alleviate": "",
    "exacerbate": "",
    "impair": "",
    "mediate": "",
    "trigger": "",
    "modulate": "",
    "target": "",
    "encode": "",
    "produce": "",
    "lead": "to",
    "result": "in",
    "contribute": "to",
    "protect": "against",
    "link": "to",
    "relate": "to",
    "affect": "",
    "restore": "",
    "diminish": "",
    "augment": "",
    "abolish": "",
    "delay": "",
    "shorten": "",
    "prolong": "",
    "mitigate": "",
    "ameliorate": "",
    "aggravate": "",
    "cure": "",
    "damage": "",
    "deplete": "",
    "phosphorylate": "",
    "degrade": "",
    "cleave": "",
    "catalyze": "",
    "metabolize": "",
    "accelerate": "",
    "counteract": "",
    "antagonize": "",
    "potentiate": "",
    "facilitate": "",
    "disrupt": "",
    "reverse": "",
    "interact": "with",
    "predispose": "to",
    "elicit": "",
    "drive": "",
    "impede": "",
    "kill": "",
    "limit": "",
    "boost": "",
}

#: Other common verbs of scientific prose (verb-likeness only, never a lexicon predicate).
GENERAL_VERBS = frozenset(
    "show demonstrate suggest indicate reveal contain appear remain seem become occur exhibit "
    "display require involve include use receive develop undergo experience report observe "
    "find lose gain have do make take give see know confirm support identify compare "
    "measure assess evaluate examine investigate detect determine represent provide allow "
    "enable play serve act exist differ vary depend respond emerge persist recover survive "
    "die present characterize consist lack need remain tend fail help begin continue "
    "randomize enroll recruit administer prescribe diagnose decline rise fall change alter "
    "differ".split()
)

IRREGULAR: dict[str, tuple[str, ...]] = {
    "bind": ("bound",),
    "lead": ("led",),
    "show": ("shown",),
    "find": ("found",),
    "rise": ("rose", "risen"),
    "fall": ("fell", "fallen"),
    "grow": ("grew", "grown"),
    "become": ("became",),
    "make": ("made",),
    "take": ("took", "taken"),
    "give": ("gave", "given"),
    "drive": ("drove", "driven"),
    "see": ("saw", "seen"),
    "know": ("knew", "known"),
    "have": ("has", "had"),
    "do": ("does", "did", "done"),
    "undergo": ("underwent", "undergone"),
    "lose": ("lost",),
    "begin": ("began", "begun"),
    "hold": ("held",),
}
_PAST_ONLY = {"bound", "led", "shown", "found", "rose", "risen", "fell", "fallen", "grew",
              "grown", "became", "made", "took", "taken", "gave", "given", "drove", "driven",
              "saw", "seen", "knew", "known", "had", "did", "done", "underwent", "undergone",
              "lost", "began", "begun", "held"}  # fmt: skip


def _double(base: str) -> bool:
    """Whether a consonant-vowel-consonant ending may be doubled (stop -> stopped)."""
    v = "aeiou"
    return len(base) >= 3 and base[-1] not in v + "wxy" and base[-2] in v and base[-3] not in v


def inflections(base: str) -> dict[str, str]:
    """Regular forms of a verb: ``{form: kind}`` with kind base / 3sg / past / ing."""
    forms = {base: "base"}
    if base.endswith(("s", "sh", "ch", "x", "z", "o")):
        forms[base + "es"] = "3sg"
    elif base.endswith("y") and base[-2:-1] not in tuple("aeiou"):
        forms[base[:-1] + "ies"] = "3sg"
    else:
        forms[base + "s"] = "3sg"
    if base.endswith("e"):
        forms[base + "d"] = "past"
        forms[(base[:-2] + "ying") if base.endswith("ie") else (base[:-1] + "ing")] = "ing"
    elif base.endswith("y") and base[-2:-1] not in tuple("aeiou"):
        forms[base[:-1] + "ied"] = "past"
        forms[base + "ing"] = "ing"
    else:
        forms[base + "ed"] = "past"
        forms[base + "ing"] = "ing"
        if _double(base):
            forms[base + base[-1] + "ed"] = "past"
            forms[base + base[-1] + "ing"] = "ing"
    return forms


def _build_forms() -> dict[str, tuple[str, str]]:
    out: dict[str, tuple[str, str]] = {}
    for base in sorted(set(PREDICATE_VERBS) | GENERAL_VERBS):
        for form, kind in inflections(base).items():
            out.setdefault(form, (base, kind))
        for form in IRREGULAR.get(base, ()):
            out[form] = (base, "past" if form in _PAST_ONLY else "3sg")  # has, does: 3sg
    return out


#: Every known verb form -> (base, kind).
VERB_FORMS: dict[str, tuple[str, str]] = _build_forms()


def third_person(base: str) -> str:
    """The 3rd person singular of a base form (``inhibit`` -> ``inhibits``)."""
    for form, kind in inflections(base).items():
        if kind == "3sg":
            return form
    return base + "s"


# --- biomedical cue words ---------------------------------------------------------------------

DRUG_SUFFIXES = (
    "mab", "nib", "pril", "statin", "olol", "sartan", "formin", "mycin", "cillin", "floxacin",
    "azole", "vir", "dipine", "prazole", "tidine", "parin", "gliptin", "gliflozin", "lukast",
    "cycline", "triptan", "afil", "setron", "glitazone", "dronate", "semide", "thiazide",
    "caine", "barbital", "azepam", "profen", "oxetine", "tinib", "ciclib", "zumab", "ximab",
)  # fmt: skip
KNOWN_DRUGS = frozenset(
    "aspirin insulin metformin warfarin heparin ibuprofen paracetamol acetaminophen morphine "
    "caffeine digoxin lithium prednisone prednisolone dexamethasone cisplatin tamoxifen "
    "methotrexate levodopa clopidogrel nitroglycerin penicillin vancomycin doxorubicin "
    "hydroxychloroquine colchicine allopurinol amiodarone furosemide vitamin "
    "estrogen testosterone cortisol melatonin folate niacin".split()
)
DISEASE_SUFFIXES = (
    "itis", "oma", "emia", "aemia", "osis", "pathy", "plasia", "algia", "uria", "ectomy",
    "penia", "trophy", "sclerosis", "plegia", "rrhea", "rrhoea",
)  # fmt: skip
DISEASE_WORDS = frozenset(
    "cancer carcinoma diabetes hypertension disease syndrome infection disorder failure "
    "infarction stroke asthma obesity sepsis tumor tumour fibrosis dementia depression "
    "anemia anaemia arthritis malaria tuberculosis hiv aids covid-19 influenza pneumonia "
    "leukemia lymphoma melanoma injury inflammation pain fracture mortality death "
    "hypercholesterolemia atherosclerosis thrombosis embolism cirrhosis hepatitis".split()
)
BIO_WORDS = frozenset(
    "placebo glucose cholesterol ldl hdl triglycerides blood pressure weight bmi hba1c protein "
    "gene receptor enzyme cytokine antibody hormone cell cells kinase pathway expression mrna dna "
    "rna mutation platelet insulin lipid serum plasma tissue liver kidney heart brain lung "
    "apoptosis proliferation aggregation secretion".split()
)
UNITS = (
    "mg/dl", "mg/kg", "mmol/l", "µmol/l", "μmol/l", "mg", "g", "kg", "µg", "μg", "mcg", "ng",
    "ml", "l", "dl", "iu", "units", "mmhg", "%", "years", "year", "weeks", "week", "days",
    "day", "hours", "hour", "months", "month", "bpm", "kg/m2", "kg/m²", "nm", "µm", "μm", "mm",
    "cm", "°c",
)  # fmt: skip

#: Reference classes: head nouns of "this drug" / "these patients" and the cue words of an
#: antecedent of the same class.
CLASS_NOUNS: dict[str, frozenset[str]] = {
    "drug": frozenset(
        "drug drugs agent agents compound compounds medication medications medicine "
        "medicines treatment treatments therapy therapies inhibitor inhibitors molecule "
        "molecules regimen antibiotic antibiotics vaccine vaccines".split()
    ),
    "patient": frozenset(
        "patient patients participant participants subject subjects individual individuals "
        "adult adults child children women men woman man people persons person cohort "
        "volunteers volunteer infants infant population mice rats animals".split()
    ),
    "gene": frozenset(
        "gene genes protein proteins receptor receptors enzyme enzymes cytokine cytokines "
        "mutation mutations variant variants kinase kinases marker markers biomarker "
        "biomarkers antibody antibodies".split()
    ),
    "disease": frozenset(
        "disease diseases condition conditions disorder disorders syndrome syndromes "
        "cancer cancers tumor tumors tumour tumours infection infections illness".split()
    ),
}
PERSON_WORDS = CLASS_NOUNS["patient"]
