"""The tool layer: protocol and registry (:mod:`.base`); built-in tools register on import."""

from .base import PAPER_CALCULATOR_MT, PAPER_DEFAULT, AnnotationSettings, Tool, TOOLS

__all__ = ["AnnotationSettings", "PAPER_CALCULATOR_MT", "PAPER_DEFAULT", "Tool", "TOOLS", "get_tool"]


def get_tool(name: str) -> Tool:
    """A registered tool by name (built-ins are registered lazily on first use)."""
    return TOOLS.get(name)
