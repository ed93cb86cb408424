"""Errors a user can cause and fix. The CLI prints them as one clear message, never a traceback."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager


class BioragError(Exception):
    """A problem with the user's input, configuration or environment.

    The message names the input and says how to fix it, in the library's terms: ``param`` is
    the argument at fault (``format``, ``out``, ``kg``...), which the CLI names as its option
    (``--format``).
    """

    def __init__(self, message: str = "", *, param: str | None = None) -> None:
        super().__init__(message)
        self.param = param


class ConfigError(BioragError):
    """An invalid configuration file, key or value."""


class InputError(BioragError):
    """An unusable argument: an empty question, say."""


class InputFormatError(BioragError):
    """A file that is not what its loader expects."""


class IndexMismatchError(BioragError):
    """An index opened with another embedding model or dimension than it was built with."""


class DamagedFileError(BioragError):
    """A file biorag wrote (an index, a knowledge graph) that can no longer be read."""


#: The fix for a damaged index file.
REBUILD_INDEX = "rebuild the index from its corpus (biorag index build, or IndexDir.add)"
#: What reading a damaged file raises: bad JSON or UTF-8, short or pickled numpy arrays, a FAISS
#: read error, a malformed SQLite database.
DAMAGE = (OSError, ValueError, RuntimeError, EOFError, KeyError, TypeError)


@contextmanager
def reading(path: object, what: str, fix: str) -> Iterator[None]:
    """Turn a failure to read ``path`` into a :class:`DamagedFileError` that names it, says what
    it is and how to fix it (``fix``: "rebuild the index with ...")."""
    import sqlite3

    try:
        yield
    except (*DAMAGE, sqlite3.DatabaseError) as e:
        if isinstance(e, BioragError):
            raise
        detail = " ".join(str(e).split())[:200]
        raise DamagedFileError(
            f"{path} ({what}) cannot be read: {type(e).__name__}: {detail}; {fix}"
        ) from None


class LLMError(BioragError):
    """An LLM backend failed after its retries, or answered something unusable."""


def require_question(text: str, name: str, example: str) -> str:
    """``text`` stripped; :class:`InputError` naming the input ``name`` when it is empty or only
    whitespace (``example`` shows the fix)."""
    if not isinstance(text, str) or not text.strip():
        got = "empty" if not text else "only whitespace"
        raise InputError(f"{name} is {got}; pass the question text, e.g. {example}")
    return text.strip()


class LLMUnavailableError(LLMError):
    """The model cannot be reached or is misconfigured (no server at ``llm.base_url``, an unknown
    ``llm.model``, refused credentials, a web page instead of the API).

    Operators that fall back to the no-LLM floor when one request fails let this one through:
    a build or an eval stops with the error instead of quietly running without its model.
    """
