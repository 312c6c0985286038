"""Run a named, versioned recipe end to end — corpus, annotate, fine-tune (tools and +CC), evaluate
(base, +CC, tool-trained with tools and disabled), report — into runs/NAME, and write the evidence
to results/NAME (report.md opening with the verdict, results.json, plots).

Recipes are configs/experiments/NAME.yaml (or a path to such a file); every field of a recipe can
be changed with its flag, e.g. ``toolformer experiment math --eval-limit 50 --docs 10``.
Re-running the same command skips finished stages and resumes unfinished ones; ``--estimate``
prints what each stage should cost on this kind of machine and runs nothing.
"""

from __future__ import annotations

import argparse

from ..config import add_dataclass_args, build_config, command_line, typed_flags
from .cli import standalone

HELP = "run a named recipe (math, search) end to end and write its evidence to results/NAME"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from ..experiment.recipe import ExperimentConfig, available

    names = ", ".join(available()) or "none found"
    parser.add_argument("name", help=f"recipe name (available: {names}) or a path to a recipe .yaml")
    parser.add_argument("--estimate", action="store_true", help="print the estimated time per stage and exit")
    add_dataclass_args(parser, ExperimentConfig)


def run(args: argparse.Namespace) -> int:
    from ..experiment.cost import clock, estimate
    from ..experiment.recipe import ExperimentConfig, recipe_layers

    cfg = build_config(ExperimentConfig, args, base=recipe_layers(args.name))
    if args.estimate:
        stages = estimate(cfg)
        for stage, seconds in stages.items():
            print(f"{stage:<14} {clock(seconds)}")
        print(f"{'total':<14} {clock(sum(stages.values()))}")
        return 0
    from ..experiment.run import Stopped, run_experiment

    command = command_line(["toolformer", "experiment", args.name, *(["--config", args.config] if args.config else [])],
                           typed_flags(ExperimentConfig, args))
    try:
        folder = run_experiment(cfg, command)
    except Stopped as stop:  # max_minutes, SIGTERM or Ctrl-C: what is finished is kept (and banked)
        print(stop)
        return 0 if stop.on_time else 130  # as a campaign: a time limit is a normal end
    print(f"evidence: {folder}/report.md (and results.json); run folder: {cfg.out}")
    return 0


main = standalone("toolformer experiment", __doc__, add_arguments, run)
