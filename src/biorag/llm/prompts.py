"""Prompt templates stored as ``.txt`` files next to the operator that uses them.

Placeholders use :class:`string.Template` syntax: ``$name`` or ``${name}``; a literal dollar is
``$$``. Braces are plain text, so templates may contain JSON examples such as
``{"answer": "yes"}`` unescaped. Every placeholder must be given a value.

For a template ``name`` in package ``pkg``:

* ``name.txt`` (or ``name.user.txt``) is the user message,
* ``name.system.txt``, when present, is the system message.

``version`` is a short SHA-256 of the text(s); pass it as ``ChatRequest.template_version`` (or
use :meth:`PromptTemplate.request`) so editing a template invalidates its cached answers.
"""

from __future__ import annotations

import hashlib
import string
from collections.abc import Mapping
from dataclasses import dataclass
from importlib import resources
from typing import Any

from biorag.llm.types import ChatRequest


def _render(text: str, label: str, values: Mapping[str, Any]) -> str:
    try:
        return string.Template(text).substitute({k: str(v) for k, v in values.items()})
    except KeyError as e:
        raise ValueError(f"prompt template {label} needs a value for ${e.args[0]}") from None
    except ValueError as e:  # a stray '$' not followed by a name
        raise ValueError(f"prompt template {label}: {e} (write a literal dollar as $$)") from None


@dataclass(frozen=True)
class PromptTemplate:
    """A user template and an optional system template, with a content version."""

    user: str
    system: str | None = None
    name: str = "inline"

    @classmethod
    def load(cls, package: str, name: str) -> PromptTemplate:
        """Load ``<name>.txt`` / ``<name>.user.txt`` and ``<name>.system.txt`` from ``package``."""
        root = resources.files(package)

        def read(fname: str) -> str | None:
            f = root.joinpath(fname)
            return f.read_text(encoding="utf-8") if f.is_file() else None

        user = read(f"{name}.user.txt")
        if user is None:
            user = read(f"{name}.txt")
        if user is None:
            raise FileNotFoundError(
                f"no prompt template {name}.txt or {name}.user.txt in package {package}"
            )
        return cls(user=user, system=read(f"{name}.system.txt"), name=f"{package}:{name}")

    @property
    def version(self) -> str:
        """First 12 hex digits of the SHA-256 of the template text(s)."""
        h = hashlib.sha256()
        h.update((self.system or "").encode("utf-8"))
        h.update(b"\x00")
        h.update(self.user.encode("utf-8"))
        return h.hexdigest()[:12]

    def render(self, **values: Any) -> str:
        """The user template with ``$name`` placeholders filled."""
        return _render(self.user, self.name, values)

    def render_system(self, **values: Any) -> str | None:
        """The system template filled (None when there is none)."""
        if self.system is None:
            return None
        return _render(self.system, f"{self.name} (system)", values)

    def messages(
        self, system_vars: Mapping[str, Any] | None = None, **user_vars: Any
    ) -> list[dict[str, str]]:
        """``[system?, user]`` chat messages.

        The user template gets ``user_vars``; the system template gets ``user_vars`` updated
        with ``system_vars``. Values a template does not use are ignored.
        """
        out: list[dict[str, str]] = []
        if self.system is not None:
            sys_values = {**user_vars, **(system_vars or {})}
            out.append({"role": "system", "content": _render(self.system, self.name, sys_values)})
        out.append({"role": "user", "content": self.render(**user_vars)})
        return out

    def request(
        self,
        values: Mapping[str, Any],
        *,
        stage: str = "default",
        system_vars: Mapping[str, Any] | None = None,
        **options: Any,
    ) -> ChatRequest:
        """A :class:`ChatRequest` for this template, its version set for the cache key.

        ``options`` are further ChatRequest fields (``json_schema``, ``max_tokens``, ...).
        """
        return ChatRequest(
            messages=self.messages(system_vars, **values),
            stage=stage,
            template_version=self.version,
            **options,
        )
