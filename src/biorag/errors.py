"""Errors a user can cause and fix. The CLI prints them as one clear message, never a traceback."""

from __future__ import annotations


class BioragError(Exception):
    """A problem with the user's input, configuration or environment.

    The message names the input and says how to fix it.
    """


class ConfigError(BioragError):
    """An invalid configuration file, key or value."""


class InputFormatError(BioragError):
    """A file that is not what its loader expects."""


class IndexMismatchError(BioragError):
    """An index opened with another embedding model or dimension than it was built with."""


class LLMError(BioragError):
    """An LLM backend failed after its retries, or answered something unusable."""
