"""Zero-shot evaluation as in the paper's §4: math, LAMA, QA, DATESET/TempLAMA, MLQA and perplexity.

Each model in ``--model`` runs under every ``--settings`` entry (``tools`` = calls on top-k with
``--k``, ``disabled`` = the call token masked, ``k1,k3,k10`` = explicit k, ``k10+arrow`` = k10 with
"->" forced once a call's input closes, ``k10+drop`` = k10 with a call that found nothing taken out of
the text (deviations, each beside the paper's decoding); ``--k-sweep`` adds the
paper's 1, 3, 10); models in ``--baselines`` run with calls disabled only. So the paper's four
columns are one command:
``toolformer eval --baselines gptj=BASE,gptj+cc=CC --model toolformer=TRAINED --tasks svamp,dateset``.

Results go to ``--out`` (per-example JSONL, summary.json, table.md, PNG plots); re-running the
same command resumes where it stopped.
"""

from __future__ import annotations

import argparse

from ..config import add_dataclass_args, build_config
from ..eval.config import EvalConfig
from .cli import standalone

HELP = "zero-shot evaluation with and without tools (tables, intervals, plots)"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from ..eval.tasks import task_list

    add_dataclass_args(parser, EvalConfig)
    parser.formatter_class = argparse.RawDescriptionHelpFormatter  # keep the task table's columns
    parser.epilog = "tasks (name, tool it exercises, description):\n" + task_list()


def run(args: argparse.Namespace) -> int:
    # Imported here: the evaluation library loads the task registry and decoders, and every
    # command module is imported just to build the CLI's parser.
    from ..eval.report import comparison_table
    from ..eval.run import run_eval

    cfg = build_config(EvalConfig, args)
    summaries = run_eval(cfg)
    print(comparison_table(summaries))
    print(f"per-example records, summary.json and table.md in {cfg.out}")
    return 0


main = standalone("toolformer eval", __doc__, add_arguments, run)
