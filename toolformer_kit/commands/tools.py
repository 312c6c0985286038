"""List the tools, show a tool's annotation prompt, or run one call the way annotation runs it.

``toolformer tools run NAME "input"`` goes through the same engine as annotation (input checks,
timeout, isolation), so what it prints is exactly what a call in the pipeline would get: the
result, or "no result" and the reason. User tools come in with ``--tools FILE`` (a ``.py`` file
or a YAML/TOML/JSON tool list) or ``$TOOLFORMER_TOOLS``.
"""

from __future__ import annotations

import argparse
import sys

from .cli import standalone

HELP = "list tools, show a tool's prompt, run a call"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--tools", action="append", default=[], metavar="FILE",
                        help="load user tools from a .py file or a YAML/TOML/JSON tool list (repeatable); "
                             "a tool file is code: it needs --trust-tool-code")
    parser.add_argument("--trust-tool-code", action="store_true",
                        help="run the code the --tools files name (a .py file runs on loading; a 'function:' "
                             "entry imports what it names); also $TOOLFORMER_TRUST_TOOL_CODE=1")
    sub = parser.add_subparsers(dest="action", required=True, metavar="ACTION")
    sub.add_parser("list", help="show every tool with its settings")
    show = sub.add_parser("show", help="print a tool's annotation prompt (instruction + demonstrations)")
    show.add_argument("name")
    run_p = sub.add_parser("run", help="run one call and print its result")
    run_p.add_argument("name")
    run_p.add_argument("input", nargs="?", default="", help="the call's input (Calendar takes none)")
    run_p.add_argument("--timeout", type=_seconds, default=None, help="seconds (default: the tool's, else 10)")
    run_p.add_argument("--cache", default=None, metavar="FILE", help="SQLite result cache to read and fill")


def _seconds(text: str) -> float:
    from ..config import ConfigError, _number

    try:
        return _number("timeout", float, text, {"min": 0.001})
    except ConfigError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _exit_now_if_abandoned(engine, code: int) -> int:
    """A timed-out call's thread may still be inside torch; letting the interpreter tear down under
    it aborts the process (SIGABRT). Everything is printed by now, so leave at once instead."""
    if engine.abandoned_alive():
        import os

        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)
    return code


def _list() -> int:
    from ..tools import get_tool, tool_names

    rows = [("name", "tau_s", "k", "m", "tau_f", "description")]
    for name in tool_names():
        tool = get_tool(name)
        s = tool.settings
        rows.append((name, f"{s.tau_s:g}", str(s.k), str(s.m), f"{s.tau_f:g}", tool.description))
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    for row in rows:
        print("  ".join(cell.ljust(w) for cell, w in zip(row, widths)).rstrip())
    return 0


def _run(args: argparse.Namespace) -> int:
    from ..calls import ToolCall
    from ..tools import get_tool
    from ..tools.engine import ToolEngine

    tool = get_tool(args.name)  # an unknown name is a usage error with a "did you mean"
    engine = ToolEngine({tool.name: tool}, timeout=args.timeout, cache_path=args.cache, workers=1)
    (res,) = engine.run([ToolCall(tool.name, args.input)])
    if res.result is not None:
        print(res.result)
        return 0
    print(f"no result: {res.error or tool.no_result_hint}", file=sys.stderr)
    return _exit_now_if_abandoned(engine, 1)


def run(args: argparse.Namespace) -> int:
    from ..tools import get_tool, load_tools_file

    for path in args.tools:
        load_tools_file(path, trust_code=args.trust_tool_code or None)
    if args.action == "list":
        return _list()
    if args.action == "show":
        tool = get_tool(args.name)
        print(tool.prompt_prefix() + tool.prompt_context("<your text>"))
        return 0
    return _run(args)


main = standalone("toolformer tools", __doc__, add_arguments, run)
