"""One LLM backend shared by many clients, and LLM settings varied by a method's overrides.

:class:`SharedLLM` holds one backend (behind one concurrency limit) and one cache; each caller
gets its own client over it (:meth:`SharedLLM.client`) with its own
:class:`~biorag.llm.accounting.Accounting`. The evaluation runner gives one client to every
(method, question); :class:`~biorag.runtime.Runtime` keeps one per distinct override set
of ``[llm]`` (IP-RAR's ``reasoning_model``), so a second model is built once, not per question.

:func:`variant_settings` validates such an override set: a JSON object whose keys are
``[llm]`` settings, merged over the configured ``[llm]`` and checked like it.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError

from biorag.config import LLMSettings, Settings
from biorag.errors import BioragError
from biorag.llm.accounting import Accounting

if TYPE_CHECKING:
    from biorag.llm.factory import LLM


class SharedLLM:
    """One backend (behind one concurrency limit) and one cache for all its clients.

    ``backend`` replaces the one ``settings.llm`` selects (tests); with ``backend = "none"``
    there is no backend and :meth:`client` gives None.
    """

    def __init__(self, settings: Settings, backend: Any | None = None) -> None:
        from biorag.llm.factory import make_backend

        self.settings = settings
        self.cfg = settings.llm
        self.backend = backend if backend is not None else make_backend(settings)
        self.limited: Any = None
        self.cache: Any = None
        if self.backend is not None:
            from biorag.llm.cache import SQLiteCache
            from biorag.llm.middleware import ConcurrencyLimit

            self.limited = ConcurrencyLimit(self.backend, self.cfg.concurrency)
            if self.cfg.cache:
                self.cache = SQLiteCache(settings.llm_cache_path())

    @property
    def model(self) -> str | None:
        return getattr(self.backend, "model", None) if self.backend is not None else None

    def client(self, accounting: Accounting) -> LLM | None:
        """A client of its own (own accounting) over the shared backend; None without an LLM.

        Composed by :func:`~biorag.llm.factory.client_of` like :func:`build_llm`'s, so every
        door gets the same chain (cache, context fit, retry, limit, accounting), with one more
        limit below it shared by all the clients (it passes the backend's window through; a
        window the backend learns from a refusal is then known to all of them).
        """
        if self.limited is None:
            return None
        from biorag.llm.factory import client_of

        return client_of(
            self.settings,
            self.limited,
            accounting=accounting,
            cache=self.cache,
        )

    async def aclose(self) -> None:
        """Close the backend's resources of the running event loop, and the cache."""
        closer = getattr(self.backend, "aclose", None)
        if closer is not None:
            await closer()
        if self.cache is not None:
            self.cache.close()


def variant_settings(settings: Settings, overrides: Any, what: str = "llm overrides") -> Settings:
    """``settings`` whose ``[llm]`` is the configured one updated with ``overrides``, validated.

    ``overrides`` must be a dict whose keys are ``[llm]`` settings (``backend``, ``model``,
    ``base_url``...); raises :class:`BioragError` naming ``what`` otherwise, or when the merged
    settings are invalid (e.g. ``backend = "openai"`` without ``base_url``).
    """
    allowed = sorted(LLMSettings.model_fields)
    if not isinstance(overrides, dict):
        raise BioragError(
            f"{what} must be a JSON object of [llm] settings (e.g. "
            f'{{"backend": "openai", "model": "deepseek-r1"}}), got {overrides!r}'
        )
    unknown = sorted(str(k) for k in set(overrides) - set(allowed))
    if unknown:
        raise BioragError(f"{what} has unknown key(s) {unknown}; allowed: {allowed}")
    try:
        llm = LLMSettings.model_validate({**settings.llm.model_dump(), **overrides})
    except ValidationError as e:
        why = "; ".join(
            f"{'.'.join(map(str, err['loc'])) or 'llm'}: "
            f"{str(err['msg']).removeprefix('Value error, ')}"
            for err in e.errors()
        )
        raise BioragError(f"{what}: not valid [llm] settings ({why})") from None
    return settings.model_copy(update={"llm": llm})


def settings_key(llm: LLMSettings) -> str:
    """A canonical text of ``[llm]`` settings: equal settings, equal key."""
    return json.dumps(llm.model_dump(mode="json"), sort_keys=True)
