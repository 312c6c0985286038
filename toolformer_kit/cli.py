"""``python -m toolformer_kit.cli`` and the old ``toolformer_kit.cli:main`` entry point: the CLI
lives in :mod:`toolformer_kit.commands.cli`; this shim keeps the documented launch lines (the
accelerate/DeepSpeed recipe, installed scripts from older wheels) working."""

import sys

from .commands.cli import main

if __name__ == "__main__":
    sys.exit(main())
