"""Run a study — scale (the recipes over model sizes), tau (τf on downstream accuracy) or cost (a
price λ on each call) — into runs/study-NAME, and write its evidence to results/study-NAME
(report.md opening with the finding, results.json, plots).

Studies are configs/studies/NAME.yaml; every field there is also a flag, e.g.
``toolformer study tau --docs 60 --tau-f-values 0,1`` or ``toolformer study cost --from-run
runs/search`` (reuse a finished experiment's annotation, read only). Re-running the same command
skips finished steps; ``--estimate`` prints what each step should cost here and runs nothing.
"""

from __future__ import annotations

import argparse
import dataclasses
import shlex

from .cli import standalone
from ..config import add_dataclass_args, load_config_file

HELP = "run a study (scale, tau, cost) over the experiment recipes and write results/study-NAME"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from ..evidence.studies import STUDIES, StudyConfig

    parser.add_argument("name", metavar="STUDY", help=f"the study: {', '.join(STUDIES)}")
    parser.add_argument("--estimate", action="store_true", help="print the estimated time per step and exit")
    add_dataclass_args(parser, StudyConfig)
    parser.add_argument("--from", dest="from_run", default=None, metavar="RUN", help="the same as --from-run")


def _flags(args: argparse.Namespace) -> dict:
    from ..evidence.studies import StudyConfig

    return {f.name: getattr(args, f.name) for f in dataclasses.fields(StudyConfig)
            if f.metadata.get("cli") is not False and getattr(args, f.name, None) is not None}


def command_line(name: str, flags: dict, config: str | None = None) -> str:
    """The command that reproduces a study, written from what was typed.

    >>> command_line("cost", {"from_run": "runs/search", "call_costs": [0.0, 1.0]})
    'toolformer study cost --from-run runs/search --call-costs 0.0,1.0'
    """
    parts = ["toolformer", "study", name] + (["--config", config] if config else [])
    for key, value in flags.items():
        flag = "--" + key.replace("_", "-")
        if isinstance(value, bool):
            parts.append(flag if value else "--no-" + flag[2:])
        else:
            parts += [flag, ",".join(map(str, value)) if isinstance(value, list) else str(value)]
    return " ".join(shlex.quote(p) for p in parts)


def run(args: argparse.Namespace) -> int:
    from ..evidence.studies import estimate_lines, load_study

    values = (load_config_file(args.config) if args.config else {}) | _flags(args)
    study = load_study(args.name, values)
    lines = estimate_lines(study)
    if args.estimate:
        print("\n".join(lines))
        return 0
    from ..evidence.studies import run_study

    print(f"study {study.name}: estimated {lines[-1].split(None, 1)[1].strip()} on an idle machine of this kind "
          f"(--estimate for each step); run folder {study.out}")
    folder = run_study(study, command_line(args.name, _flags(args), args.config))
    print(f"evidence: {folder}/report.md (and results.json); run folder: {study.out}")
    return 0


main = standalone("toolformer study", __doc__, add_arguments, run)
