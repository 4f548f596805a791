"""The memory explorer: ``langchain-mastra-memory ui`` (the ``ui`` extra: Starlette, Jinja2,
uvicorn). `create_app(memory)` is the web app; `views` reads what each page shows."""

from __future__ import annotations

from .app import create_app

__all__ = ["create_app"]
