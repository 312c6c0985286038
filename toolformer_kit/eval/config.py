"""Every setting of an evaluation run, and where the benchmark copies are found.

One dataclass drives the ``toolformer eval`` flags, the pipeline's evaluation stage and the
experiment recipes, so all three read the same defaults and the same data-folder rule.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional

from ..config import ConfigError
from ..registry import UnknownNameError
from ..tools import BUILTIN, get_tool

PAPER_TASKS = ["lama-squad", "lama-google-re", "lama-trex", "svamp", "asdiv", "mawps", "webquestions",
               "nq", "triviaqa", "dateset", "wikitext2"]
NO_DATA_TASKS = {"dateset", "dateset-days", "wiki-cloze"}
DATA_ENV = "TOOLFORMER_DATA_DIR"


@dataclass
class EvalConfig:
    model: list[str] = field(default_factory=list, metadata={
        "help": "models evaluated under every --settings entry: embedded name, HF folder or LABEL=MODEL"})
    baselines: list[str] = field(default_factory=list, metadata={
        "help": "models evaluated with calls disabled only (the paper's GPT-J and GPT-J + CC columns)"})
    tasks: list[str] = field(default_factory=lambda: list(PAPER_TASKS), metadata={"help": "comma-separated task names"})
    settings: list[str] = field(default_factory=lambda: ["tools", "disabled"], metadata={
        "help": "tools (calls on top-k), disabled, or kN; tools+arrow or kN+arrow also force '->' once a "
                "call's input closes; +callsN allows N calls per input, +typed constrains inputs to the "
                "tool's grammar (k10+calls2+typed), +drop takes a call that found nothing out of the text"})
    k: int = field(default=10, metadata={"help": "a call opens when ' [' is among the top k tokens"})
    max_calls: int = field(default=1, metadata={
        "help": "calls per input in every setting with calls on (1 = the paper; N > 1 names the setting kN+callsN)"})
    k_sweep: bool = field(default=False, metadata={"help": "also run k = 1, 3, 10 (the paper's Table 9)"})
    tools: list[str] = field(default_factory=lambda: list(BUILTIN), metadata={
        "help": "tools the models may call (each task still removes the ones the paper removes)"})
    data_dir: Optional[str] = field(default=None, metadata={
        "help": "benchmark folder laid out like shared/data/benchmarks (default: ../shared/data/benchmarks)"})
    out: str = field(default="eval-out", metadata={"help": "output folder (re-running resumes)"})
    limit: Optional[int] = field(default=None, metadata={"help": "at most N examples (documents) per task"})
    batch_size: int = field(default=64, metadata={
        "help": "prompts decoded together (a finished one's slot takes the next prompt at once)"})
    seed: int = field(default=0, metadata={"help": "seed for decoding and bootstrap"})
    bootstrap: int = field(default=1000, metadata={"help": "bootstrap resamples for the 95%% intervals"})
    heldout: Optional[str] = field(default=None, metadata={
        "help": "held-out corpus (.jsonl with 'text' or blank-line separated .txt) for perplexity"})
    ppl_window: int = field(default=1024, metadata={"help": "perplexity window (tokens)"})
    ppl_stride: int = field(default=512, metadata={"help": "tokens scored per perplexity window"})
    device: Optional[str] = field(default=None, metadata={"help": "torch device (default: cuda if available)"})
    backend: str = field(default="hf", metadata={"help": "LM backend: hf (transformers) or vllm"})
    dtype: str = field(default="auto", metadata={
        "help": "compute dtype: auto (bf16 on a GPU or a CPU where bf16 is measured faster, else fp32), fp32 or bf16"})
    threads: Optional[int] = field(default=None, metadata={
        "help": "torch CPU threads (default: torch's choice; 1 is far faster when other jobs share the cores)"})
    plots: bool = field(default=True, metadata={"help": "write PNG plots (needs matplotlib)"})


def default_data_dir() -> Path:
    """``$TOOLFORMER_DATA_DIR``, else ``../shared/data/benchmarks`` next to the repository root
    (where the project keeps its copies of the published dev sets)."""
    if os.environ.get(DATA_ENV):
        return Path(os.environ[DATA_ENV]).expanduser()
    return Path(__file__).resolve().parents[2].parent / "shared" / "data" / "benchmarks"


def resolve_data_dir(cfg: EvalConfig) -> Path:
    if cfg.data_dir:
        path = Path(cfg.data_dir).expanduser()
        if not path.is_dir():
            raise ConfigError(f"--data-dir {path} is not a folder; point it at your benchmark copies")
        return path
    path = default_data_dir()
    if not path.is_dir() and set(cfg.tasks) - NO_DATA_TASKS:
        raise ConfigError(f"no benchmark folder at the default {path}; pass --data-dir DIR or set "
                          f"{DATA_ENV} (laid out like shared/data/benchmarks, see its README)")
    return path


_LABEL = re.compile(r"[\w.+-]+")


def parse_model(spec: str) -> tuple[str, str]:
    """``LABEL=MODEL`` or ``MODEL`` → (label, model); a folder's label is its name.

    A label names a folder under --out, so it must be a plain name: one that is a path (``/tmp/x``,
    ``a/../../x``) would write outside --out.

    >>> parse_model("base=qwen2.5-coder-0.5b"), parse_model("/runs/tf-qwen/")
    (('base', 'qwen2.5-coder-0.5b'), ('tf-qwen', '/runs/tf-qwen/'))
    >>> parse_model("a/../../x=M")
    Traceback (most recent call last):
    ...
    toolformer_kit.config.ConfigError: --model 'a/../../x=M': the label 'a/../../x' is a path; a label is a plain name (letters, digits, '-', '_', '.', '+'), e.g. tuned=M
    """
    if "=" in spec:
        label, _, model = spec.partition("=")
        label, model = label.strip(), model.strip()
    else:
        label, model = Path(spec.rstrip("/")).name or spec, spec
    if not _LABEL.fullmatch(label) or label in (".", ".."):
        raise ConfigError(f"--model {spec!r}: the label {label!r} is a path; a label is a plain name (letters, "
                          "digits, '-', '_', '.', '+'), e.g. tuned=M")
    return label, model


def load_tools(names: list[str]) -> dict:
    try:
        return {name: get_tool(name) for name in names}
    except UnknownNameError as exc:
        raise ConfigError(f"--tools: {exc}") from None


def check_tasks(cfg: EvalConfig) -> Path:
    """Fail before the long stages, not after them, when a task is unknown or its data cannot be
    read: each task's examples are loaded once here (seconds), so a missing file is found now.
    Returns the data folder."""
    from .tasks import get_task  # the task registry imports every loader; EvalConfig alone stays light

    data_dir = resolve_data_dir(cfg)
    for name in cfg.tasks:
        try:
            examples = get_task(name).load(data_dir)
        except KeyError as exc:
            raise ConfigError(f"--tasks: {exc}") from None
        except FileNotFoundError as exc:
            raise ConfigError(f"task {name}: {exc}") from None
        if not examples:
            raise ConfigError(f"task {name}: its data under {data_dir} holds no examples (an empty file?); restore "
                              "the benchmark file (shared/data/README.md says what each holds) or drop the task")
    return data_dir
