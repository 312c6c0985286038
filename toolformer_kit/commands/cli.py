"""The ``toolformer`` command: one subcommand per module in :mod:`toolformer_kit.commands`.

Each command module provides ``HELP``, ``add_arguments(parser)`` and ``run(args) -> int``, and a
``main(argv)`` made by :func:`standalone`, so ``toolformer models list`` and
``toolformer_kit.commands.models.main(["list"])`` do the same thing.
"""

from __future__ import annotations

import argparse
import importlib
import logging
import sys
from typing import Callable, Sequence

# name → module; each module is imported only to build its parser (keep their imports light).
COMMANDS = {
    "models": "toolformer_kit.commands.models",
    "annotate": "toolformer_kit.commands.annotate",
    "positions": "toolformer_kit.commands.positions",
    "generate": "toolformer_kit.commands.generate",
    "tools": "toolformer_kit.commands.tools",
    "eval": "toolformer_kit.commands.eval",
    "train": "toolformer_kit.commands.train",
    "inspect": "toolformer_kit.commands.inspect",
    "pipeline": "toolformer_kit.commands.pipeline",
    "experiment": "toolformer_kit.commands.experiment",
    "study": "toolformer_kit.commands.study",
    "campaign": "toolformer_kit.commands.campaign",
    "chaining": "toolformer_kit.commands.chaining",
    "merge": "toolformer_kit.commands.merge",
}

log = logging.getLogger("toolformer_kit")


def _user_errors() -> tuple[type[BaseException], ...]:
    from ..config import ConfigError
    from ..lm.embedded import ModelError
    from ..registry import UnknownNameError

    return (ConfigError, ModelError, UnknownNameError, FileNotFoundError)


def _setup_logging(verbose: bool) -> None:
    logging.basicConfig(level=logging.DEBUG if verbose else logging.INFO,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s", datefmt="%H:%M:%S")


def _execute(run: Callable[[argparse.Namespace], int], args: argparse.Namespace) -> int:
    _setup_logging(getattr(args, "verbose", False))
    try:
        return int(run(args) or 0)
    except _user_errors() as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("interrupted; finished outputs are kept and a re-run resumes", file=sys.stderr)
        return 130


def standalone(prog: str, doc: str | None, add_arguments, run) -> Callable[[Sequence[str] | None], int]:
    """Build the importable ``main(argv)`` of a command module."""

    def main(argv: Sequence[str] | None = None) -> int:
        parser = argparse.ArgumentParser(prog=prog, description=doc)
        parser.add_argument("-v", "--verbose", action="store_true", help="debug logging")
        add_arguments(parser)
        return _execute(run, _parse(parser, argv))

    return main


def build_parser() -> argparse.ArgumentParser:
    from .. import __version__

    parser = argparse.ArgumentParser(
        prog="toolformer",
        description="Toolformer: annotate a corpus with useful tool calls, fine-tune on it, "
                    "decode and evaluate with tools.")
    parser.add_argument("--version", action="version", version=f"toolformer-kit {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name, module_name in COMMANDS.items():
        module = importlib.import_module(module_name)
        p = sub.add_parser(name, help=module.HELP, description=module.__doc__)
        p.add_argument("-v", "--verbose", action="store_true", help="debug logging")
        module.add_arguments(p)
        p.set_defaults(_run=module.run)
    return parser


def _parse(parser: argparse.ArgumentParser, argv: Sequence[str] | None) -> argparse.Namespace:
    """Parse, after rewriting ``--flag false`` to ``--no-flag`` (boolean flags take no value)."""
    from ..config import ConfigError, normalize_bool_args

    try:
        argv = normalize_bool_args(parser, list(sys.argv[1:] if argv is None else argv))
    except ConfigError as exc:
        parser.error(str(exc))
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    args = _parse(build_parser(), argv)
    return _execute(args._run, args)


if __name__ == "__main__":
    sys.exit(main())
