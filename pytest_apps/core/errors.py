"""The errors every layer speaks of: `HarnessError`, the harness itself failing (not the candidate)."""

from __future__ import annotations

__all__ = ["HarnessError"]


class HarnessError(Exception):
    """The harness itself failed (not the candidate): reported as a pytest error, not a failure."""
