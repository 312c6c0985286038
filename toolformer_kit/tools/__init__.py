"""The tool layer: protocol and registry (:mod:`.base`), the paper's five tools, user tools
(:mod:`.user`) and the execution engine (:mod:`.engine`).

The built-in tools are registered as lazy ``"module:attr"`` targets, so importing this package
costs nothing: a tool's module (and its index or model, on first call) loads only when the tool
is looked up. User tools listed in ``$TOOLFORMER_TOOLS`` are loaded on the first lookup.

>>> sorted(BUILTIN) == [n for n in tool_names() if n in BUILTIN]
True
>>> get_tool("Calculator")("(2 + 3) * 4")
'20'
>>> get_tool("Calculater")  # doctest: +ELLIPSIS
Traceback (most recent call last):
...
toolformer_kit.registry.UnknownNameError: unknown tool 'Calculater'; did you mean 'Calculator'? Known: Calculator, ...
"""

from .base import PAPER_CALCULATOR_MT, PAPER_DEFAULT, TOOLS, AnnotationSettings, Tool
from .user import load_env_tools, load_tools_file, make_tool, register_tool

__all__ = ["AnnotationSettings", "PAPER_CALCULATOR_MT", "PAPER_DEFAULT", "Tool", "TOOLS", "get_tool",
           "load_tools_file", "make_tool", "register_tool", "tool_names"]

BUILTIN = {
    "Calculator": "toolformer_kit.tools.calculator:CALCULATOR",
    "Calendar": "toolformer_kit.tools.calendar:CALENDAR",
    "WikiSearch": "toolformer_kit.tools.wikisearch:WIKISEARCH",
    "QA": "toolformer_kit.tools.qa:QA",
    "MT": "toolformer_kit.tools.mt:MT",
}
for _name, _target in BUILTIN.items():
    if _name not in TOOLS:
        TOOLS.add(_name, _target)


def get_tool(name: str) -> Tool:
    """A registered tool by name; unknown names raise with a "did you mean" hint."""
    if name not in TOOLS:
        load_env_tools()
    return TOOLS.get(name)


def tool_names() -> list[str]:
    """Every tool name, built-in and user-defined (loading ``$TOOLFORMER_TOOLS`` first)."""
    load_env_tools()
    return TOOLS.names()
