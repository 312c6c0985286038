"""Run the whole method on the embedded default: pull models, build the Wikipedia index, annotate a
real corpus sample, fine-tune with LoRA (tool-trained and +CC), evaluate base vs +CC vs
tool-trained (with tools and disabled), and write report/report.html and report/report.md.

Re-running the same command skips finished stages and resumes unfinished ones.
"""

from __future__ import annotations

import argparse

from ..config import add_dataclass_args, build_config
from .cli import standalone

HELP = "the whole chain end to end (annotate → train → eval → report)"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from ..pipeline.config import PipelineConfig

    add_dataclass_args(parser, PipelineConfig)


def run(args: argparse.Namespace) -> int:
    from ..pipeline.config import PipelineConfig
    from ..pipeline.run import run_pipeline

    md, page = run_pipeline(build_config(PipelineConfig, args))
    print(f"report: {page} (and {md})")
    return 0


main = standalone("toolformer pipeline", __doc__, add_arguments, run)
