"""The model card (README.md) and the loss / perplexity plot written next to a trained model.

A trained folder should say by itself what it is: which tools its data used, how much data,
which settings, and how dev perplexity moved. Both files are built from the Trainer's
``log_history`` and a summary dict, by pure functions, so they can be rebuilt for any run.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Sequence

from ..plots import pyplot, save

PLOT_NAME = "training_curve.png"


def curves(log_history: Sequence[dict]) -> tuple[list[tuple[int, float]], list[tuple[int, float]]]:
    """(step, training loss) and (step, dev perplexity) pairs from ``trainer.state.log_history``.

    >>> curves([{"step": 0, "eval_perplexity": 9.0}, {"step": 10, "loss": 2.5}, {"step": 10, "eval_perplexity": 8.0}])
    ([(10, 2.5)], [(0, 9.0), (10, 8.0)])
    """
    train = [(int(e["step"]), float(e["loss"])) for e in log_history if "loss" in e]
    dev = [(int(e["step"]), float(e["eval_perplexity"])) for e in log_history if "eval_perplexity" in e]
    return train, dev


def plot_curves(train: Sequence[tuple[int, float]], dev: Sequence[tuple[int, float]], path: str | Path,
                title: str = "") -> Path | None:
    """Training loss (left axis) and dev perplexity (right axis) against the optimiser step; None
    without matplotlib."""
    plt = pyplot()
    if plt is None:
        return None
    fig, ax = plt.subplots(figsize=(7, 4), dpi=120)
    if train:
        ax.plot(*zip(*train), color="tab:blue", label="training loss")
    ax.set_xlabel("optimiser step")
    ax.set_ylabel("training loss (nats/token)", color="tab:blue")
    right = ax.twinx()
    if dev:
        right.plot(*zip(*dev), color="tab:red", marker="o", label="dev perplexity")
    right.set_ylabel("dev perplexity (plain text)", color="tab:red")
    ax.set_title(title or "fine-tuning on C*")
    ax.grid(alpha=0.3)
    return save(fig, path, dpi=120)


def _table(header: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return "\n".join(lines)


def render_card(summary: dict[str, Any]) -> str:
    """Markdown model card from a run summary (see ``trainer.run_training`` for its keys).

    >>> card = render_card({"name": "m", "base_model": "smollm2-135m", "plain_baseline": False,
    ...     "tools": {"Calculator": 3}, "counts": {"train documents": 5}, "hyperparameters": {"lr": 1e-5},
    ...     "evaluations": [(0, 20.5), (500, 18.25)], "best_step": 500, "wall_time_s": 12.0})
    >>> "| 500 | 18.25 |" in card and "Calculator" in card
    True
    """
    kind = ("the same texts with every call removed (the '+CC' baseline)" if summary["plain_baseline"]
            else "texts with tool calls and their results written in (Toolformer)")
    tools = summary.get("tools") or {}
    tool_lines = "\n".join(f"- {name}: {count} calls" for name, count in sorted(tools.items())) or "- none"
    evals = summary.get("evaluations") or []
    best = summary.get("best_step")
    eval_rows = [(step, f"{ppl:.2f}" if ppl < 1000 else f"{ppl:.4g}") for step, ppl in evals]
    front = {"base_model": summary["base_model"], "library_name": "transformers",
             "tags": ["toolformer", "toolformer-kit", "cc-baseline" if summary["plain_baseline"] else "tool-use"]}
    return "\n".join([
        "---", *(f"{k}: {json.dumps(v)}" for k, v in front.items()), "---", "",
        f"# {summary['name']}", "",
        f"Continued training of `{summary['base_model']}` with the next-token objective on {kind}. "
        "Written by `toolformer train` (toolformer-kit).", "",
        "## Tools in the training data", "", tool_lines, "",
        "## Data", "", _table(["", "count"], list((summary.get("counts") or {}).items())), "",
        "## Hyper-parameters", "", _table(["setting", "value"], list((summary.get("hyperparameters") or {}).items())), "",
        "## Dev perplexity", "",
        f"Token-level perplexity on held-out {_dev_kind(summary)}; step 0 is the model before training.", "",
        *_dev_note(summary),
        _table(["step", "perplexity"], eval_rows) if eval_rows else "No evaluation was run.", "",
        f"Kept checkpoint: step {best}." if best is not None else "", "",
        f"Wall time: {summary.get('wall_time_s', 0):.0f} s.", "",
        f"![training loss and dev perplexity]({PLOT_NAME})", "",
    ])


def _dev_kind(summary: dict[str, Any]) -> str:
    """What the dev texts hold: a card once said "plain texts (no calls)" for dev texts carved
    with their calls kept (``--dev-with-calls``)."""
    with_calls = ((summary.get("config") or {}).get("dev_with_calls")
                  or "calls kept" in (summary.get("counts") or {}).get("dev source", ""))
    return "texts with their calls written in" if with_calls else "plain texts (no calls)"


def _dev_note(summary: dict[str, Any]) -> list[str]:
    """Where the dev texts came from; a slice of the training file is flagged, since it is not
    the paper's dev set (held-out documents) and checkpoint choice rests on it."""
    source = (summary.get("counts") or {}).get("dev source", "")
    if not source:
        return []
    return [f"**Dev texts: {source}.**" if source.startswith("carved") else f"Dev texts: {source}.", ""]


def write_card(folder: str | Path, summary: dict[str, Any], log_history: Sequence[dict]) -> None:
    """README.md and the plot; the summary gets the per-evaluation perplexities filled in."""
    folder = Path(folder)
    train, dev = curves(log_history)
    summary = {**summary, "evaluations": dev}
    plot_curves(train, dev, folder / PLOT_NAME, title=summary["name"])
    (folder / "README.md").write_text(render_card(summary), encoding="utf-8")
