"""Subcommands of the ``toolformer`` CLI; see :mod:`toolformer_kit.cli`."""
