"""Run the whole method on the embedded default and end with a model that uses its tool: Qwen 0.5B
annotates fresh maths windows with the Calculator (the paper's settings, one model M), is fine-tuned
on those calls joined with the published datasets/cstar-math, and is evaluated on SVAMP, ASDiv and
MAWPS with the paper's decoding against calls disabled; report/report.html and report/report.md
open with what the run is and its verdict, and the run prints worked examples and how to try the
model. ``--config configs/pipeline/smoke.yaml`` is the older smoke run (SmolLM2, four tools, LoRA, +CC).

Re-running the same command skips finished stages and resumes unfinished ones.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from ..config import add_dataclass_args, build_config
from .cli import standalone

HELP = "the whole chain end to end (annotate → train → eval → report)"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from ..pipeline.config import PipelineConfig

    add_dataclass_args(parser, PipelineConfig)


def run(args: argparse.Namespace) -> int:
    from ..pipeline.config import PipelineConfig
    from ..pipeline.run import run_pipeline

    cfg = build_config(PipelineConfig, args)
    md, page = run_pipeline(cfg)
    print(closing_text(Path(cfg.out)))
    print(f"report: {page} (and {md})")
    return 0


def closing_text(out: Path) -> str:
    """What the terminal shows last: the worked examples and the command to try the model."""
    from ..pipeline.examples import try_command

    shown = (out / "examples.txt").read_text(encoding="utf-8").strip() if (out / "examples.txt").is_file() else ""
    lines = ["", "Worked examples (the tool-trained model, the paper's decoding):", "", shown or "(none: no call ran)",
             "", "Try it on your own question (from the repository, after `source .venv/bin/activate`):",
             "  " + try_command(out / "train-tools"), ""]
    return "\n".join(lines)


main = standalone("toolformer pipeline", __doc__, add_arguments, run)
