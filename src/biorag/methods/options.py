"""Each method's options as a pydantic model, checked by
:func:`~biorag.methods.registry.build_method` before the method is made.

The models are made from each method's defaults (their types are the defaults' types; an
option whose default is None, or that takes one of a few words, is typed here), with unknown
options refused. So an unknown or mistyped option is one line that names the method, the option
and what it allows, the same from the CLI, the Python API, the service and eval::

    method claims: unknown option 'top_kk' (did you mean 'top_k'?); allowed: denoise, ...
    method claims: option top_k must be a whole number, not 'ten'
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping
from typing import Any, Literal, Union, get_args

from pydantic import BaseModel, ConfigDict, ValidationError, create_model

from biorag.errors import BioragError
from biorag.methods import claim_chunks, claims, crag, iprar, raptor, rewrite, selfrag
from biorag.methods.context import READERS

__all__ = ["OPTION_DEFAULTS", "check_options", "options_model"]

_CHUNKS = {"k": None, "retriever": None}
_RETRIEVERS = Literal["bm25", "dense", "hybrid"]

#: Every method's options and their defaults (None: the ``[retrieval]`` settings decide).
OPTION_DEFAULTS: dict[str, dict[str, Any]] = {
    "closed-book": {},
    "retrieve-read": dict(_CHUNKS),
    "claims": claims.DEFAULTS,
    "rewrite": rewrite.CHUNK_DEFAULTS,
    "hyde": rewrite.CHUNK_DEFAULTS,
    "raptor": raptor.DEFAULTS,
    "claim": claim_chunks.DEFAULTS,
    "vectorgraphrag": {
        "kg": None,
        "k": 10,
        "top_n": 300,
        "min_entity_sim": 0.9,
        "min_triplet_sim": 0.1,
        "use_options": True,
        "direction": "out",
        "paper_compat": False,
        "backend": "sqlite",
        "neo4j_uri": None,
        "neo4j_user": None,
        "neo4j_database": None,
        "neo4j_password_env": None,
    },
    "iprar": iprar.DEFAULTS,
    "crag": crag.DEFAULTS,
    "selfrag": selfrag.DEFAULTS,
}

#: Types the defaults cannot tell (a None default, a choice of words, a list).
_TYPES: dict[str, Any] = {
    "k": int | None,
    "retriever": _RETRIEVERS | None,
    "reader": Literal[READERS],
    "mode": Literal[claims.MODES],
    "denoise": Literal["keep", "drop", "downweight"],
    "rerank_query": Literal[rewrite.RERANK_QUERIES],
    "retrieval": Literal[selfrag.RETRIEVAL_MODES],
    "kg": str | None,
    "direction": Literal["out", "both"],
    "backend": Literal["sqlite", "neo4j"],
    "neo4j_uri": str | None,
    "neo4j_user": str | None,
    "neo4j_database": str | None,
    "neo4j_password_env": str | None,
    "weights": Any,  # IP-RAR checks its three weights itself, with a clearer message
    "keyword_levels": Any,  # likewise
    "reasoning_model": dict[str, Any] | str | None,
    "abstract_corpus": str | None,
    "fulltext_corpus": str | None,
    "summary_min_relevance": float | None,
}

_KINDS = {
    "int_parsing": "a whole number",
    "int_from_float": "a whole number",
    "int_type": "a whole number",
    "float_parsing": "a number",
    "float_type": "a number",
    "bool_parsing": "true or false",
    "bool_type": "true or false",
    "string_type": "text",
    "list_type": "a list",
}

_MODELS: dict[str, type[BaseModel]] = {}


def _type_of(name: str, default: Any) -> Any:
    """An option's type: from :data:`_TYPES` or its default's; None is a value only where it
    is the default (``k`` may be None where the settings decide, not where it is 10)."""
    typ = _TYPES.get(name, Any if default is None else type(default))
    if default is not None and type(None) in get_args(typ):
        return Union[tuple(a for a in get_args(typ) if a is not type(None))]  # noqa: UP007
    return typ


def options_model(method: str, defaults: Mapping[str, Any] | None = None) -> type[BaseModel]:
    """The pydantic model of ``method``'s options (unknown options refused); ``defaults`` for a
    method biorag does not know (a plugin's, a test's)."""
    model = _MODELS.get(method) if defaults is None else None
    if model is None:
        defaults = OPTION_DEFAULTS[method] if defaults is None else defaults
        fields: dict[str, Any] = {
            name: (_type_of(name, value), value) for name, value in defaults.items()
        }
        title = "".join(part.title() for part in method.split("-")) + "Options"
        model = create_model(title, __config__=ConfigDict(extra="forbid"), **fields)
        if method in OPTION_DEFAULTS:
            _MODELS[method] = model
    return model


def check_options(
    method: str, options: Mapping[str, Any] | None, defaults: Mapping[str, Any] | None = None
) -> dict[str, Any]:
    """``options`` checked against ``method``'s and converted to their types (a number given
    as text is read); only the options given are returned, the method merges its defaults.
    One :class:`BioragError` line names what is wrong and what is allowed. A method biorag does
    not know is checked against ``defaults`` (its ``DEFAULTS``), or not at all without them."""
    if not options:
        return {}
    if method not in OPTION_DEFAULTS and defaults is None:
        return dict(options)
    if not isinstance(options, Mapping):
        raise BioragError(
            f"method {method}: options must be a JSON object of option names and values, "
            f"not {type(options).__name__}"
        )
    model = options_model(method, None if method in OPTION_DEFAULTS else defaults)
    try:
        checked = model.model_validate(dict(options))
    except ValidationError as e:
        raise BioragError(_one_line(method, model, options, e.errors()[0])) from None
    return checked.model_dump(include=set(options))


def _one_line(method: str, model: type[BaseModel], options: Mapping[str, Any], err: Any) -> str:
    allowed = sorted(model.model_fields)
    name = str(err["loc"][0]) if err["loc"] else ""
    if err["type"] == "extra_forbidden":
        if not allowed:
            return f"method {method} takes no options; remove {name!r}"
        near = difflib.get_close_matches(name, allowed, n=1)
        hint = f" (did you mean {near[0]!r}?)" if near else ""
        return f"method {method}: unknown option {name!r}{hint}; allowed: {', '.join(allowed)}"
    value = options.get(name)
    kind = _KINDS.get(err["type"])
    if kind is None and err["type"] == "literal_error":
        kind = "one of " + str(err.get("ctx", {}).get("expected", "the listed values"))
    if kind is None:
        kind = str(err["msg"]).lower()
    default = model.model_fields[name].default
    return (
        f"method {method}: option {name} must be {kind} (the default is {default!r}), not {value!r}"
    )
