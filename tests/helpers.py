"""Test helpers: every scripted model checks its input as OpenAI and Anthropic do."""

from __future__ import annotations

from langchain_mastra_memory.testing import ProviderStrictChatModel, strict_model

ScriptedChatModel = ProviderStrictChatModel
scripted = strict_model

__all__ = ["ScriptedChatModel", "scripted", "strict_model"]
