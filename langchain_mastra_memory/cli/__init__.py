"""The ``langchain-mastra-memory`` command line (Typer + Rich).

Examples:
    >>> from typer.testing import CliRunner
    >>> "threads" in CliRunner().invoke(app, ["--help"]).output
    True
"""

# each module registers its commands, in the order `--help` lists them
# isort: off
from . import commands, threads, demo, servers  # noqa: F401

# isort: on
from .shared import app

__all__ = ["app"]
