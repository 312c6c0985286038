"""A recipe: the settings of one named experiment, versioned as ``configs/experiments/NAME.yaml``.

One dataclass, :class:`ExperimentConfig`, holds every setting; its fields are the YAML keys and
the ``toolformer experiment`` flags alike, so a recipe can be re-run with any field changed
(``--eval-limit 50``) and the result states exactly what it was run with. Priority, lowest
first: the dataclass defaults, the recipe file, a ``--config`` file, the flags.
"""

from __future__ import annotations

import dataclasses
import difflib
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional

from ..annotate.config import AnnotateConfig
from ..config import ConfigError, Layer, config_field as _f, file_layer, layered, stage_field
from ..eval.config import EvalConfig
from ..eval.tasks import ToolPolicy, get_task
from ..train.config import TrainConfig

RECIPES_ENV = "TOOLFORMER_RECIPES"
CORPORA = ("gsm8k", "gsm8k-prose", "wiki")


@dataclass
class ExperimentConfig:
    """A recipe's settings. A setting that is a stage's is that stage config's field
    (:func:`~toolformer_kit.config.stage_field`: its help text and range written once, there), at
    the recipe's smaller default; the rest are the recipe's own (its corpus, goals, report)."""

    name: str = _f("", "the recipe's name (the positional argument)", cli=False)
    description: str = _f("", "one line: what the recipe shows", cli=False)
    out: str = _f("", "run folder (default: runs/NAME); every stage writes a subfolder and is skipped once done")
    results: str = _f("", "where the committed evidence goes (default: results/NAME): report.md, results.json, "
                          "plots; never weights")
    replace_results: bool = _f(False, "replace a --results folder whose results.json another configuration wrote "
                                      "(refused otherwise, so a smoke run never overwrites committed evidence)")
    # ------------------------------------------------------------ annotation
    model: str = stage_field(AnnotateConfig, "model", also=(TrainConfig,), note="it also samples unless --sampler-model, and is "
                                                           "fine-tuned and evaluated: the paper's M")
    sampler_model: str = stage_field(AnnotateConfig, "sampler_model")
    tools: list[str] = stage_field(AnnotateConfig, "tools", ["Calculator"], also=(EvalConfig,),
                                   note="and to evaluate with")
    corpus: str = _f("gsm8k", "corpus: gsm8k (worked maths solutions), gsm8k-prose (the same with "
                              "'16 / 2 = 8' written as '8') or wiki (Wikipedia summaries the evaluation does not ask about)")
    docs: int = _f(40, "documents annotated (the main cost knob of annotation)", min=1)
    window_tokens: int = stage_field(AnnotateConfig, "window_tokens", 128, min=8)
    k: Optional[int] = stage_field(AnnotateConfig, "k")
    m: Optional[int] = stage_field(AnnotateConfig, "m")
    tau_s: Optional[float] = stage_field(AnnotateConfig, "tau_s")
    tau_f: Optional[float] = stage_field(AnnotateConfig, "tau_f")
    call_cost: float = stage_field(AnnotateConfig, "call_cost", added=True)
    wiki_exclude_self: bool = stage_field(AnnotateConfig, "wiki_exclude_self")
    # ------------------------------------------------------------ fine-tuning (LoRA, both runs)
    train_steps: int = stage_field(TrainConfig, "max_steps", 40, note="per fine-tuning run, tool-trained and +CC")
    train_batch: int = stage_field(TrainConfig, "effective_batch", 8)
    micro_batch: int = stage_field(TrainConfig, "batch_size", 4, note="a memory knob: the effective batch stays",
                                   min=1)
    learning_rate: float = stage_field(TrainConfig, "learning_rate", 3e-4,
                                       note="3e-4 suits LoRA; full fine-tuning wants ~1e-5 to 2e-5")
    lora: bool = stage_field(TrainConfig, "lora", True, note="r 16; off = full fine-tuning, the paper's, "
                                                             "~14 GB for Qwen 0.5B on the CPU")
    cstar_dataset: str = _f("", "a published C* dataset folder (e.g. datasets/cstar-math) to fine-tune on instead "
                                "of annotating here: its data/cstar.jsonl and data/documents.jsonl become the run's "
                                "annotation, and each run holds out 10 %% of its own texts as dev texts; several "
                                "folders joined by commas are merged (campaign.merged: the paper's per-tool cap)")
    cstar_texts: str = _f("with_calls", "what the tool-trained model is fine-tuned on: with_calls (the texts "
                                        "with a kept call) or all (every annotated text, calls where kept: "
                                        "the paper's C*, 'the exact same texts as C')")
    train_keep: str = stage_field(TrainConfig, "keep", note="the tool-trained model's; +CC keeps its best")
    train_dev: str = _f("corpus", "dev texts that pick the checkpoint: corpus (held-out plain documents, the "
                                  "paper's) or cstar (10 %% of C* held out with their calls, which do not "
                                  "penalise learning the call syntax)")
    max_length: int = stage_field(TrainConfig, "max_length", 192)
    dev_docs: int = _f(30, "held-out documents of the same corpus; their perplexity picks each run's checkpoint", min=1)
    # ------------------------------------------------------------ evaluation
    tasks: list[str] = stage_field(EvalConfig, "tasks", ["svamp", "asdiv", "mawps"])
    eval_limit: int = stage_field(EvalConfig, "limit", 200, note="a fixed hash-ordered sample; all when the task "
                                                                 "has fewer")
    eval_batch: int = stage_field(EvalConfig, "batch_size", 64, min=1)
    k_eval: int = stage_field(EvalConfig, "k", note="the paper's k = 10", min=1)
    eval_force_arrow: bool = _f(False, "also evaluate the tool-trained model with '->' forced once a call's input "
                                       "is closed (setting k10+arrow), reported beside the paper's decoding")
    eval_drop_empty: bool = _f(False, "also evaluate the tool-trained model with a call that found nothing taken out "
                                      "of the text before it goes on (setting k10+drop), reported beside the paper's "
                                      "decoding and paired against it (issue 40: does an empty call cost the answer?)",
                               added=True)
    references: bool = _f(True, "train +CC and evaluate the base model and +CC, the paper's reference columns "
                                "(the scale study reads only tools vs disabled and turns them off)")
    base_reference: bool = _f(False, "without references, still evaluate the base model with calls disabled: no "
                                      "training, one short column (is tools vs disabled only the trained model "
                                      "losing without its calls?)", added=True)
    lama_search: bool = _f(False, "let WikiSearch run on LAMA (the paper disables it there; stated as a deviation)")
    ceiling: bool = _f(False, "measure the retrieval ceiling and report accuracies on the retrievable subset")
    eval_subset: str = _f("all", "examples evaluated: all (eval_limit of each task) or retrievable (only those whose "
                                 "gold is in the top 3 passages for the question, eval_limit of them; needs ceiling)")
    bootstrap: int = stage_field(EvalConfig, "bootstrap")
    # ------------------------------------------------------------ goals (the verdict checks them)
    goal_gain: float = _f(20.0, "points that tools must add over disabled on one task (paired interval > 0)",
                          min=0, max=100)
    goal_subset: str = _f("all", "where the gain is measured: all, or retrievable (the ceiling's subset)")
    goal_call_rate: float = _f(0.0, "share of inputs with a call the goal also asks for (0 = none)", min=0, max=1)
    endpoint_gain: float = _f(0.0, "pre-registered endpoint: pooled tools − disabled over all tasks, in points, "
                                   "with its 95%% interval above 0 (0 = no endpoint)", min=0, max=100)
    endpoint_well_formed: float = _f(0.0, "pre-registered endpoint: share of opened calls written well-formed "
                                          "(Tool(input) ->)", min=0, max=1)
    endpoints: list[str] = _f([], "pre-registered endpoints, one line each: 'NAME: MEASURE TASKS OP VALUE' with "
                                  "MEASURE gain, gain@retrievable, right_tool or ppl_ratio (measures.endpoints), "
                                  "e.g. 'math: gain svamp,asdiv,mawps >= 20'; the report opens with them",
                              empty_ok=True, added=True)
    which_tool: bool = _f(False, "report which tool the model calls on each task (a task x tool table, the right-tool "
                                 "rate, accuracy by tool called) and the paper's GPT-J numbers beside ours: the "
                                 "one-model recipe's analysis (measures.which_tool)", added=True)
    specialists: list[str] = _f([], "committed results folders of specialist models (e.g. results/math) set beside "
                                    "this model's gains, task by task (measures.specialists)", empty_ok=True,
                                added=True)
    publish_model: str = _f("", "models/NAME: after the report, the tool-trained LoRA adapter is written there in "
                                "bf16 with a model card made from results.json, so the model outlives this machine "
                                "(experiment.publish; needs lora)", added=True)
    bank: str = _f("", "a folder in the repository (banks/NAME) that keeps the run's finished parts: the ledger, each "
                       "fine-tuning run's LoRA adapter and the evaluation's answers, saved after every stage and when "
                       "the run stops; a run on a fresh machine starts from it (experiment.bank). Commit it to go on "
                       "elsewhere", added=True)
    max_minutes: float = _f(0.0, "stop after this many minutes (0 = no limit), between stages or inside one, banking "
                                 "what is finished (with bank); the same command goes on", min=0.0, added=True)
    pilot_results: str = _f("", "a ceiling pilot's folder (benchmarks/ceiling_pilot.py --out): its closed-book vs "
                                "oracle table opens the report (a folder not there yet is reported as not run)")
    qa_check_results: str = _f("", "a QA tool check's folder (benchmarks/qa_tool_check.py --out): the QA tool's own "
                                   "right / wrong / abstained table in the report")
    earlier_tries: list[str] = _f([], "results folders of earlier tries at the same endpoint (e.g. "
                                      "results/math-cstar-1); the report lists each beside this run, so no try is "
                                      "left out")
    # ------------------------------------------------------------ machine
    data_dir: Optional[str] = stage_field(EvalConfig, "data_dir", note="$TOOLFORMER_DATA_DIR when set")
    seed: int = _f(0, "seed for every stage", feeds=(AnnotateConfig, TrainConfig, EvalConfig))
    threads: Optional[int] = stage_field(EvalConfig, "threads")
    backend: str = stage_field(AnnotateConfig, "backend", also=(EvalConfig,), note="annotation, the probe and the evaluation; "
                                                               "fine-tuning is transformers'", added=True)
    dtype: str = stage_field(TrainConfig, "dtype", also=(AnnotateConfig, EvalConfig), note="annotation and fine-tuning; the probe and the evaluation "
                                                        "keep the library's default under auto, fp32 on a CPU, as "
                                                        "every recipe before this setting", added=True)

    def __post_init__(self) -> None:
        if self.publish_model and not self.lora:
            raise ConfigError(f"publish_model {self.publish_model!r} needs a LoRA run (lora: true): a full "
                              "fine-tuning's weights (~1.2 GB for Qwen 0.5B) do not belong in the repository")
        if self.train_keep not in ("best", "last"):
            raise ConfigError(f"train_keep must be best or last, not {self.train_keep!r}")
        if self.cstar_texts not in ("with_calls", "all"):
            raise ConfigError(f"cstar_texts must be with_calls or all, not {self.cstar_texts!r}")
        if self.train_dev not in ("corpus", "cstar"):
            raise ConfigError(f"train_dev must be corpus or cstar, not {self.train_dev!r}")
        if self.corpus not in CORPORA:
            raise ConfigError(f"corpus must be one of {', '.join(CORPORA)}, not {self.corpus!r}")
        if self.eval_subset not in ("all", "retrievable"):
            raise ConfigError(f"eval_subset must be all or retrievable, not {self.eval_subset!r}")
        if self.eval_subset == "retrievable" and not self.ceiling:
            raise ConfigError("eval_subset retrievable needs the ceiling: set ceiling: true (--ceiling)")
        if self.goal_subset not in ("all", "retrievable"):
            raise ConfigError(f"goal_subset must be all or retrievable, not {self.goal_subset!r}")
        if self.goal_subset == "retrievable" and not self.ceiling:
            raise ConfigError("goal_subset retrievable needs the ceiling: set ceiling: true (--ceiling)")
        from ..measures.endpoints import parse_endpoint

        for line in self.endpoints:
            e = parse_endpoint(line, self.tasks)
            if e.measure == "gain@retrievable" and not self.ceiling:
                raise ConfigError(f"endpoint {line!r} needs the ceiling: set ceiling: true (--ceiling)")
        self.out = self.out or f"runs/{self.name or 'experiment'}"
        self.results = self.results or f"results/{self.name or 'experiment'}"


def recipes_dir() -> Path:
    """``$TOOLFORMER_RECIPES``, else ``configs/experiments`` in the repository."""
    if os.environ.get(RECIPES_ENV):
        return Path(os.environ[RECIPES_ENV]).expanduser()
    return Path(__file__).resolve().parents[2] / "configs" / "experiments"


def available(folder: Path | None = None) -> list[str]:
    folder = folder or recipes_dir()
    return sorted(p.stem for p in folder.glob("*.yaml")) if folder.is_dir() else []


def recipe_path(name: str, folder: Path | None = None) -> Path:
    """The recipe file for ``name`` (a recipe name, or a path to a .yaml file), or one error line
    listing the recipes there are.

    >>> import tempfile; d = Path(tempfile.mkdtemp()); _ = (d / "math.yaml").write_text("docs: 1")
    >>> recipe_path("math", d).name
    'math.yaml'
    >>> recipe_path("maths", d)
    Traceback (most recent call last):
    ...
    toolformer_kit.config.ConfigError: unknown recipe 'maths' (did you mean 'math'?); available: math
    """
    if name.endswith((".yaml", ".yml")) and Path(name).is_file():
        return Path(name)
    folder = folder or recipes_dir()
    path = folder / f"{name}.yaml"
    if path.is_file():
        return path
    names = available(folder)
    close = difflib.get_close_matches(name, names, n=1, cutoff=0.5)
    hint = f" (did you mean {close[0]!r}?)" if close else ""
    listing = ", ".join(names) if names else f"none in {folder}"
    raise ConfigError(f"unknown recipe {name!r}{hint}; available: {listing}")


def recipe_layers(name: str, folder: Path | None = None) -> list[Layer]:
    """The recipe's file as the bottom layers of its settings (its name, then its YAML), for
    :func:`~toolformer_kit.config.layered` and ``build_config(..., base=...)``."""
    path = recipe_path(name, folder)
    return [("the recipe's name", {"name": path.stem}), file_layer(path)]


def load_recipe(name: str, overrides: dict[str, Any] | None = None, folder: Path | None = None) -> ExperimentConfig:
    """The recipe's settings with ``overrides`` (already typed values; None = not set) on top."""
    typed = {k: v for k, v in (overrides or {}).items() if v is not None}
    return layered(ExperimentConfig, *recipe_layers(name, folder), ("overrides", typed))


def eval_tasks(cfg: ExperimentConfig) -> list:
    """The recipe's tasks; with ``lama_search`` LAMA may call WikiSearch (the paper forbids it there)."""
    tasks = [get_task(t) for t in cfg.tasks]
    if not cfg.lama_search:
        return tasks
    return [dataclasses.replace(t, policy=ToolPolicy(tuple(x for x in t.policy.excluded if x != "WikiSearch")),
                                exercises="WikiSearch") if t.name.startswith("lama-") else t for t in tasks]
