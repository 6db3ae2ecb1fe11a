"""The public path for the ready agents: `--apps-agent pytest_apps.agents:openai_chat`."""

from .candidates.openai_chat import ChatError, openai_chat

__all__ = ["ChatError", "openai_chat"]
