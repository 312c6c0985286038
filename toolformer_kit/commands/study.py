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

from .cli import standalone
from ..config import add_dataclass_args, build_config, command_line, typed_flags

HELP = "run a study (scale, tau, cost) over the experiment recipes and write results/study-NAME"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from ..study.run import STUDIES, StudyConfig

    parser.add_argument("name", metavar="STUDY", help=f"the study: {', '.join(STUDIES)}")
    parser.add_argument("--estimate", action="store_true", help="print the estimated time per step and exit")
    add_dataclass_args(parser, StudyConfig)
    parser.add_argument("--from", dest="from_run", default=None, metavar="RUN", help="the same as --from-run")


def run(args: argparse.Namespace) -> int:
    from ..study.run import EXTENDED, StudyConfig, estimate_lines, study_layers

    study = build_config(StudyConfig, args, base=study_layers(args.name), extend=EXTENDED)
    lines = estimate_lines(study)
    if args.estimate:
        print("\n".join(lines))
        return 0
    from ..study.run import run_study

    print(f"study {study.name}: estimated {lines[-1].split(None, 1)[1].strip()} on an idle machine of this kind "
          f"(--estimate for each step); run folder {study.out}")
    words = ["toolformer", "study", args.name, *(["--config", args.config] if args.config else [])]
    folder = run_study(study, command_line(words, typed_flags(StudyConfig, args)))
    print(f"evidence: {folder}/report.md (and results.json); run folder: {study.out}")
    return 0


main = standalone("toolformer study", __doc__, add_arguments, run)
