"""Subcommands of the ``toolformer`` CLI; see :mod:`toolformer_kit.commands.cli`.

Each module parses flags, calls the library and prints; nothing else imports this package. A
command imports the library inside ``run`` (and config dataclasses inside ``add_arguments``), not
at its top: the CLI imports every command module to build its parser, so ``toolformer --help``
stays fast and never loads torch.
"""
