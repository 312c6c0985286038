"""The whole method end to end on one machine: models → index → annotate → fine-tune → evaluate →
worked examples → report.

Each stage is a call into the same function its own subcommand runs, with its own output folder
under ``--out``; a stage whose completion marker exists is skipped, so re-running the command
after an interruption continues where it stopped (annotation and training also resume inside
their stage). The defaults are sized for a 2-core CPU; the knobs that scale the run up are the
fields of :class:`PipelineConfig`.
"""

from __future__ import annotations

import json
import logging
import random
from pathlib import Path
from typing import Callable, Iterable

from ..annotate.config import AnnotateConfig
from ..annotate.sources import SOURCES, _load_wiki, _sentences
from ..config import stage_config
from ..eval.config import EvalConfig, check_tasks
from ..eval.run import run_eval
from ..files import write_atomic
from ..lm.base import set_threads
from ..tools import get_tool
from ..train.config import TrainConfig
from ..lm.embedded import resolve_model
from . import driver, examples, fresh, report, stages
from .config import PipelineConfig, fine_tuning

log = logging.getLogger(__name__)

def _done(path: Path) -> bool:
    return path.exists()


def annotate_config(cfg: PipelineConfig, out: Path) -> AnnotateConfig:
    """The annotation the pipeline runs, every tool at its paper settings (k, m, τs, τf): of the
    embedded corpus (``--corpus default``), or of fresh maths windows (``math``) as the maths
    campaign annotates them: the Calculator pre-filter's strict part, and no e(c, ε) scored where
    the score is already below 0 (decisions at τf ≥ 0 unchanged)."""
    if cfg.corpus == "math":  # the windows are the campaign's, cut already: the default corpus's sizes stay out
        return stage_config(AnnotateConfig, cfg, skip=("default_docs", "window_tokens"), corpus=str(out / FRESH),
                            out=str(out / "annotate"), calculator_rate=0.0, score_floor=0.0, shard_size=4)
    return stage_config(AnnotateConfig, cfg, corpus="default", out=str(out / "annotate"))


FRESH = "fresh-windows.jsonl"  # the windows a --corpus math run annotates, for the reader


def _token_counter(model: str):
    from transformers import AutoTokenizer  # lazy: only a run that cuts windows needs it

    tok = AutoTokenizer.from_pretrained(resolve_model(model))
    return lambda text: len(tok.encode(text, add_special_tokens=False))


def fresh_documents(cfg: PipelineConfig, out: Path) -> Callable[[], list] | None:
    """What makes the windows a ``--corpus math`` run annotates (written beside it for the reader),
    called only when that annotation has yet to finish; None for a corpus the annotation reads."""
    if cfg.corpus != "math":
        return None

    def make() -> list:
        docs = fresh.fresh_windows(cfg.fresh_windows, cfg.seed, cfg.cstar_datasets, _token_counter(cfg.model))
        fresh.write_windows(out / FRESH, docs)
        return docs
    return make


def heldout_texts(exclude: set[str], n: int, seed: int) -> list[str]:
    """Wikipedia summaries that training did not see (``--dev-source wiki``). ``exclude`` holds the
    texts trained on, which are *windows* of long summaries, so a summary containing one is out."""
    texts = sorted(v["extract"] for v in _load_wiki("en-us").values() if v.get("extract"))
    seen = [w for w in exclude if w]
    pool = [t for t in texts if len(t) > 200 and not any(w in t for w in seen)]
    return random.Random(seed + 7919).sample(pool, min(n, len(pool)))


def subject(doc_id: str) -> str:
    """What a default-corpus document is about: its article title for ``wiki`` and ``mt`` (an ``mt``
    document reuses the English summary's sentences), else its id; a window suffix is dropped.

    >>> subject("wiki:Asterix#1"), subject("mt:fr:Asterix"), subject("gsm8k:715")
    ('title:Asterix', 'title:Asterix', 'gsm8k:715')
    """
    head, _, tail = doc_id.rpartition("#")
    base = head if head and tail.isdigit() else doc_id
    source, _, rest = base.partition(":")
    if source == "wiki":
        return "title:" + rest
    if source == "mt":
        return "title:" + rest.partition(":")[2]
    return base


def _long_sentences(text: str) -> set[str]:
    return {s for s in _sentences(text) if len(s) >= 40}


def heldout_documents(seen_ids: Iterable[str], seen_texts: Iterable[str], n: int,
                      seed: int) -> list[tuple[str, str]]:
    """(id, text) of ``n`` documents drawn from the default corpus's own sources, in turn, that the
    annotation never saw: the paper's dev set is held-out documents of the training distribution,
    so checkpoint choice must not favour one source or reward memorising the training texts.
    A document is seen when its :func:`subject` was annotated or one of its long sentences occurs
    in an annotated text (windows and ids of another form are caught this way too)."""
    seen = {subject(i) for i in seen_ids}
    sentences = set().union(*map(_long_sentences, seen_texts))
    per = -(-n // len(SOURCES))
    groups = []
    for name, make in SOURCES.items():
        pool = make(3 * per + len(seen), random.Random(f"{seed}:heldout:{name}"))
        groups.append([(d.doc_id, d.text) for d in pool
                       if subject(d.doc_id) not in seen and not sentences & _long_sentences(d.text)][:per])
    mixed = [d for turn in zip(*[g + [None] * (per - len(g)) for g in groups]) for d in turn if d]
    return mixed[:n]


def _read_jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.open(encoding="utf-8") if line.strip()]


def stage_dev(cfg: PipelineConfig, out: Path, annotated: Path) -> Path | None:
    """Held-out documents for ``--dev-source corpus`` or ``wiki``; None for ``cstar``, where each
    training run holds out 10 % of its own data (with the calls, for the tool-trained run)."""
    if cfg.dev_source == "cstar":
        return None
    path = out / "dev.jsonl"
    if not _done(path):
        docs = _read_jsonl(annotated / "documents.jsonl")
        if cfg.dev_source == "wiki":
            texts = heldout_texts({d["text"] for d in docs}, cfg.dev_docs, cfg.seed)
            rows = [{"id": f"dev-{i}", "text": t} for i, t in enumerate(texts)]
        else:
            picked = heldout_documents([d["id"] for d in docs], [d["text"] for d in docs], cfg.dev_docs,
                                       cfg.seed)
            rows = [{"id": i, "text": t} for i, t in picked]
        write_atomic(path, "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows))
    return path


def training_data(cfg: PipelineConfig, annotated: Path, out: Path | None = None) -> dict[str, Path]:
    """The file each run trains on: C* for the tool run (this run's kept calls joined after the
    published ``--cstar-datasets``); for +CC, by default every annotated text, because the paper's
    +CC baseline is the model fine-tuned on the same subset C that was annotated, not only on the
    texts that kept a call."""
    if cfg.cstar_datasets:
        files = fresh.joined(annotated, cfg.cstar_datasets, Path(out or cfg.out) / "train-data")
        cstar, docs = files["cstar.jsonl"], files["documents.jsonl"]
    else:
        cstar, docs = annotated / "corpus.jsonl", annotated / "documents.jsonl"
    return {"tool-trained": cstar, "+CC": docs if cfg.cc_data == "annotated" else cstar}


def train_config(cfg: PipelineConfig, out: Path, data: Path, dev: Path | None, plain: bool) -> TrainConfig:
    """A fine-tuning run on ``data`` (LoRA or full, ``--lora``): tool-trained, or +CC (``plain``),
    its checkpoint chosen on ``dev``, or, without one, on 10 % of ``data`` held out (the tool run's
    with its calls kept: a call-free dev set penalises learning the call syntax)."""
    return fine_tuning(cfg, data=str(data), out=str(out / ("train-cc" if plain else "train-tools")),
                       plain_baseline=plain, dev_data=str(dev) if dev else None,
                       dev_with_calls=dev is None and not plain)


def eval_config(cfg: PipelineConfig, out: Path, tools_model: Path, cc_model: Path | None,
                dev: Path | None) -> EvalConfig:
    """The evaluation the pipeline runs: the tool-trained model under the default settings (the
    paper's decoding, and calls disabled), and with calls disabled the base model
    (``--base-baseline``) and +CC (``--train-cc``): the paper's columns; held-out perplexity on
    the dev documents when there are some. The models may call the tools the run annotated: a
    model trained on Calculator calls only has no use for a search index or an MT model."""
    baselines = ([f"base={cfg.model}"] if cfg.base_baseline else []) + ([f"cc={cc_model}"] if cc_model else [])
    return stage_config(EvalConfig, cfg, model=[f"toolformer={tools_model}"], baselines=baselines,
                        out=str(out / "eval"), heldout=str(dev) if dev else None)


def evaluate(ecfg: EvalConfig) -> Path:
    run_eval(ecfg)
    return Path(ecfg.out)


def stage_examples(cfg: PipelineConfig, out: Path, evaluated: Path) -> list[dict]:
    """The worked examples, also written to ``out/examples.txt`` for the command to print."""
    picked = examples.pick(evaluated, cfg.tasks, cfg.examples)
    write_atomic(out / "examples.txt", examples.as_text(picked) + "\n")
    return picked


def check_inputs(cfg: PipelineConfig) -> None:
    """Unknown tasks and unreadable task data fail now, before the long stages."""
    check_tasks(EvalConfig(tasks=list(cfg.tasks), data_dir=cfg.data_dir))


def run_pipeline(cfg: PipelineConfig) -> tuple[Path, Path]:
    check_inputs(cfg)
    for name in cfg.tools:  # before any stage writes: an unknown name used to surface at annotation
        get_tool(name)
    for name in cfg.cstar_datasets:  # a missing published C* fails now, not after annotation
        fresh.dataset_dir(name)
    out = Path(cfg.out)
    out.mkdir(parents=True, exist_ok=True)
    set_threads(cfg.threads)
    watch, done = driver.Watch(), {}
    driver.run_stages(plan(cfg, out, watch.seconds, done), watch, done)
    (out / "timings.json").write_text(json.dumps(watch.seconds, indent=1))
    return done["report"]


def plan(cfg: PipelineConfig, out: Path, timings: dict[str, float], done: dict) -> list[driver.Stage]:
    """The pipeline's stages in order, for :func:`~.driver.run_stages`: each reads the outputs of
    the earlier ones from ``done``; the report also reads the seconds the stages took."""
    def data() -> dict[str, Path]:  # the files each run trains on, joined once the annotation is done
        if "data" not in done:
            done["data"] = training_data(cfg, done["annotate"], out)
        return done["data"]

    def train(plain: bool) -> Path:
        files = data()["+CC" if plain else "tool-trained"]
        return stages.train(train_config(cfg, out, files, done["dev texts"], plain))

    def write_report():
        trained = {"tool-trained": done["train (tools)"], **({"+CC": done["train (+CC)"]} if cfg.train_cc else {})}
        picked = stage_examples(cfg, out, done["evaluate"])
        return report.write_report(cfg, out, done["annotate"], trained, done["evaluate"], timings,
                                   data()["tool-trained"], picked)

    steps = [driver.Stage("models", None, lambda: stages.pull_models([cfg.model, cfg.sampler_model])),
             driver.Stage("index", None, lambda: stages.prepare_index(cfg.tools)),
             driver.Stage("annotate", None,
                          lambda: stages.annotate(annotate_config(cfg, out), fresh_documents(cfg, out))),
             driver.Stage("dev texts", None, lambda: stage_dev(cfg, out, done["annotate"])),
             driver.Stage("train (tools)", None, lambda: train(False))]
    if cfg.train_cc:
        steps.append(driver.Stage("train (+CC)", None, lambda: train(True)))
    steps += [driver.Stage("evaluate", None, lambda: evaluate(eval_config(
                  cfg, out, done["train (tools)"], done.get("train (+CC)"), done["dev texts"]))),
              driver.Stage("report", None, write_report)]
    return steps
