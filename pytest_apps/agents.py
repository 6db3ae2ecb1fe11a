"""The ready agents under their public name, `pytest_apps.agents:<agent>` (e.g.
`--apps-agent pytest_apps.agents:openai_chat`); they live in `pytest_apps.candidates.agents`."""

from .candidates.agents import ChatError, openai_chat

__all__ = ["ChatError", "openai_chat"]
