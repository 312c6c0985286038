"""Publish a recipe's tool-trained model in the repository: its LoRA adapter and a model card.

Why: every trained model used to die with the machine that trained it (issue 42). A LoRA adapter
in bf16 is small enough to commit (Qwen 0.5B at r 16: 16.8 MB), and ``load_lm`` folds it into its
embedded base on any machine. The card is a pure function of the run's results.json, written with
the report's own blocks, so it says exactly what the report says about that model.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Mapping

from .. import blocks as R
from ..eval.verdict import verdict_blocks
from ..files import read_json, write_atomic
from . import report

CARD = "README.md"


def _made_rows(res: Mapping, size_mb: float) -> list[tuple[str, str]]:
    s, trained = res["settings"], (res.get("training") or {}).get("tool-trained") or {}
    curve = ", ".join(f"{step}: {ppl:.2f}" for step, ppl in trained.get("evaluations") or [])
    machine = res.get("machine") or {}
    return [("data", str(s.get("cstar_dataset") or "the run's own annotation") + f" ({s.get('cstar_texts')} texts)"),
            ("tools", ", ".join(s.get("tools") or [])),
            ("fine-tuning", f"LoRA on {s['model']}; {s['train_steps']} steps of {s['train_batch']} sequences of "
                            f"≤ {s['max_length']} tokens, lr {s['learning_rate']:g}, dtype {s.get('dtype', 'auto')}"),
            ("kept checkpoint", f"step {trained.get('best_step')} (dev perplexity by step: {curve or '–'})"),
            ("adapter", f"{size_mb:.1f} MB in bf16"),
            ("command", f"`{res.get('command', '')}`"),
            ("seed, commit", f"{res.get('seed')}, {res.get('commit')}"),
            ("machine", f"{machine.get('cpu', '?')}, {machine.get('cores', '?')} cores, torch {machine.get('torch', '?')}")]


def model_card(res: Mapping, model_dir: str, size_mb: float) -> str:
    """The card of a model published from the run behind ``res`` (its results.json) into
    ``model_dir`` (a repository path such as ``models/NAME``)."""
    s = res["settings"]
    results = s.get("results") or ""
    tools = ",".join(s.get("tools") or [])
    intro = (f"A LoRA adapter ({size_mb:.1f} MB, bf16) for the embedded `{s['model']}`, published by the recipe "
             f"`{res['recipe']}` ({res.get('description') or 'no description'}). It loads on any machine with the "
             f"install: its base is named by its embedded name, and `load_lm` folds the adapter into it.")
    use = R.Block("code", text=f"toolformer generate --model {model_dir} --tools {tools} \"PROMPT\"\n"
                               f"toolformer eval --model {model_dir} --tools {tools} --tasks {','.join(s.get('tasks') or [])}")
    evidence = f"The evidence behind it: [{results}]({os.path.relpath(results + '/report.md', model_dir)})." if results else ""
    blocks = [R.Block("h1", f"{Path(model_dir).name} — {res['recipe']}"), R.Block("p", intro), use,
              R.Block("p", evidence)]
    blocks += report._endpoints_blocks(res.get("endpoints"))
    blocks += verdict_blocks(res["headline"], res["verdict"])
    blocks += report._specialist_blocks(res.get("specialists"))
    blocks += [R.Block("h2", "How it was made"),
               R.Block("table", header=("", ""), rows=_made_rows(res, size_mb))]
    blocks += [R.Block("h2", "Deviations from the paper")] + [R.Block("p", "⚠ " + d) for d in res.get("deviations", [])]
    return R.to_markdown(blocks)


def stage_publish(adapter_dir: Path, results_dir: Path, model_dir: str, base_model: str) -> Path:
    """The adapter in ``model_dir`` (bf16) with its card; returns ``model_dir``."""
    from ..train.lora import adapter_mb, publish_adapter

    out = publish_adapter(adapter_dir, model_dir, base_model)
    write_atomic(out / CARD, model_card(read_json(results_dir / "results.json"), model_dir, adapter_mb(out)))
    return out
