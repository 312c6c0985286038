"""The end-to-end report: one self-contained HTML file and a markdown copy of the same content.

The report is assembled as a list of blocks (heading, paragraph, table, image) and rendered twice,
so the two files cannot drift apart. HTML escapes every piece of text (corpus text included) and
inlines the PNG plots as data URIs, so the file can be mailed or archived on its own.
"""

from __future__ import annotations

import base64
import html
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

from .annotate import records as R


@dataclass
class Block:
    kind: str  # "h1", "h2", "p", "table", "img", "code"
    text: str = ""
    header: Sequence[str] = ()
    rows: Sequence[Sequence[object]] = ()
    path: str = ""


def to_markdown(blocks: Sequence[Block]) -> str:
    """
    >>> print(to_markdown([Block("h2", "A"), Block("table", header=("x", "y"), rows=[(1, "a|b")])]), end="")
    ## A
    <BLANKLINE>
    | x | y |
    |---|---|
    | 1 | a\\|b |
    """
    out = []
    for b in blocks:
        if b.kind in ("h1", "h2", "h3"):
            out.append("#" * int(b.kind[1]) + " " + b.text + "\n")
        elif b.kind == "p":
            out.append(b.text + "\n")
        elif b.kind == "code":
            out.append("```\n" + b.text + "\n```\n")
        elif b.kind == "img":
            out.append(f"![{b.text}]({b.path})\n")
        elif b.kind == "table":
            cell = lambda v: str(v).replace("|", "\\|").replace("\n", " ")  # noqa: E731
            lines = ["| " + " | ".join(map(cell, b.header)) + " |", "|" + "---|" * len(b.header)]
            lines += ["| " + " | ".join(map(cell, r)) + " |" for r in b.rows]
            out.append("\n".join(lines) + "\n")
    return "\n".join(out)


CSS = ("body{font:15px/1.5 system-ui,sans-serif;max-width:72em;margin:2em auto;padding:0 1em;color:#1d1d1f}"
       "table{border-collapse:collapse;margin:.6em 0}th,td{border:1px solid #ddd;padding:3px 8px;text-align:left;"
       "vertical-align:top}th{background:#f3f4f6}img{max-width:100%;border:1px solid #eee}"
       "pre{background:#f6f8fa;padding:.8em;overflow:auto}")


def to_html(blocks: Sequence[Block], title: str) -> str:
    esc = html.escape
    out = [f"<!doctype html><html lang='en'><head><meta charset='utf-8'><title>{esc(title)}</title>"
           f"<style>{CSS}</style></head><body>"]
    for b in blocks:
        if b.kind in ("h1", "h2", "h3"):
            out.append(f"<{b.kind}>{esc(b.text)}</{b.kind}>")
        elif b.kind == "p":
            out.append(f"<p>{esc(b.text)}</p>")
        elif b.kind == "code":
            out.append(f"<pre>{esc(b.text)}</pre>")
        elif b.kind == "img":
            data = base64.b64encode(Path(b.path).read_bytes()).decode()
            out.append(f"<p><img alt='{esc(b.text)}' src='data:image/png;base64,{data}'></p>")
        elif b.kind == "table":
            head = "".join(f"<th>{esc(str(h))}</th>" for h in b.header)
            rows = "".join("<tr>" + "".join(f"<td>{esc(str(v))}</td>" for v in r) + "</tr>" for r in b.rows)
            out.append(f"<table><thead><tr>{head}</tr></thead><tbody>{rows}</tbody></table>")
    out.append("</body></html>")
    return "\n".join(out)


def md_table(text: str) -> Block:
    """Parse a simple pipe table (as written by the eval report) back into a table block."""
    lines = [ln.strip() for ln in text.strip().splitlines() if ln.strip().startswith("|")]
    split = lambda ln: [c.strip() for c in ln.strip("|").split(" | ")]  # noqa: E731
    return Block("table", header=split(lines[0]), rows=[split(ln) for ln in lines[2:]]) if lines else Block("p")


PAPER_MODEL_NOTE = "the paper samples, scores and fine-tunes with one model M (§2)"


def deviations(settings: dict) -> list[str]:
    """The ways a pipeline run departs from the paper's method, one sentence each, so a reader sees
    them before any number. ``settings`` is the pipeline's config as a mapping.

    >>> deviations({"model": "smollm2-135m", "sampler_model": "smollm2-135m"})
    []
    >>> print(deviations({"model": "smollm2-135m", "sampler_model": "qwen2.5-coder-0.5b"})[0])
    Calls are sampled by qwen2.5-coder-0.5b but scored and fine-tuned with smollm2-135m; the paper samples, scores and fine-tunes with one model M (§2).
    """
    out = []
    model, sampler = settings.get("model", ""), settings.get("sampler_model", "")
    if sampler and sampler != model:
        out.append(f"Calls are sampled by {sampler} but scored and fine-tuned with {model}; {PAPER_MODEL_NOTE}.")
    if settings.get("cc_data") == "cstar":
        out.append("+CC is fine-tuned on the texts of C* only (calls removed), not on every annotated text "
                   "as in the paper.")
    if settings.get("dev_source") == "wiki":
        out.append("Dev perplexity uses Wikipedia summaries only, not held-out documents of the annotated "
                   "corpus's own sources as in the paper.")
    return out


def deviation_blocks(settings: dict) -> list[Block]:
    lines = deviations(settings)
    if not lines:
        return []
    return [Block("h2", "Deviations from the paper")] + [Block("p", "⚠ " + line) for line in lines]


# tools the paper's tasks exercise, for task objects that do not say it themselves
TASK_TOOLS = {"svamp": "Calculator", "asdiv": "Calculator", "mawps": "Calculator", "dateset": "Calendar",
              "webquestions": "WikiSearch", "nq": "WikiSearch", "triviaqa": "WikiSearch"}
TASK_PREFIX_TOOLS = {"mlqa-": "MT", "lama-": "QA"}


def exercised(task_name: str) -> str:
    """The tool a task measures: the task's own ``exercises`` field where it has one, else the
    paper's reading (maths: Calculator, open QA: WikiSearch, …); "" when there is none.

    >>> exercised("svamp"), exercised("mlqa-de"), exercised("wikitext2")
    ('Calculator', 'MT', '')
    """
    try:
        from .eval.tasks import get_task

        own = getattr(get_task(task_name), "exercises", "")
    except KeyError:
        own = ""
    if own:
        return own if isinstance(own, str) else ", ".join(own)
    name = task_name.lower()
    return TASK_TOOLS.get(name) or next((t for p, t in TASK_PREFIX_TOOLS.items() if name.startswith(p)), "")


def task_tool_blocks(tasks: Sequence[str], annotated_tools: Sequence[str]) -> list[Block]:
    """Which tool each task measures, and which annotated tools no task measures."""
    rows = [(t, exercised(t) or "none", "yes" if set(_split(exercised(t))) & set(annotated_tools) else "no")
            for t in tasks]
    measured = {tool for t in tasks for tool in _split(exercised(t))}
    blocks = [Block("h3", "Tasks and the tools they exercise"),
              Block("table", header=("task", "exercises", "tool annotated in this run"), rows=rows)]
    missing = [t for t in annotated_tools if t not in measured]
    if missing:
        blocks.append(Block("p", f"Annotated but measured by no task here: {', '.join(missing)}."))
    return blocks


def _split(tools: str) -> list[str]:
    return [t.strip() for t in tools.split(",") if t.strip()]


def annotation_blocks(folder: Path, taus: Sequence[float] = (0.5, 1.0, 2.0), examples: int = 8) -> list[Block]:
    summary = json.loads((folder / "summary.json").read_text("utf-8"))
    blocks = [Block("h2", "Annotation (the paper's Table 2 and Table 10)"),
              Block("p", f"{summary['corpus']['documents']} documents; {summary['c_star_texts']} texts "
                         "in C* with at least one kept call.")]
    header = ["tool", "sampled", "scored"] + [f"kept at τf={t}" for t in taus]
    rows = []
    for tool, counts in summary["tools"].items():
        kept = summary["kept_by_tau_f"].get(tool, {})
        rows.append([tool, counts.get("samples", counts.get("sampled", "")), kept.get("scored", 0)] +
                    [f"{kept.get(f'tau_f={t}', {}).get('calls', 0)} calls / {kept.get(f'tau_f={t}', {}).get('texts', 0)} texts"
                     for t in taus])
    blocks.append(Block("table", header=header, rows=rows))
    cands = R.read_jsonl(folder / "candidates.jsonl")
    scored = sorted((c for c in cands if c.score is not None), key=lambda c: -c.score)
    kept = [c for c in scored if c.kept][:examples]
    rejected = [c for c in scored if not c.kept][:examples]
    for title, chosen in (("Kept calls, best first", kept), ("Rejected calls, closest to the threshold", rejected)):
        blocks.append(Block("h3", title))
        blocks.append(Block("table", header=("tool", "call", "result", "L⁻", "L⁺", "score"), rows=[
            (c.tool, c.input, c.result, f"{c.L_minus:.3f}", f"{c.L_plus:.3f}", f"{c.score:.3f}") for c in chosen]))
    blocks.append(Block("h3", "Kept calls in context"))
    blocks += [Block("p", f"[{t['tool']}, score {t['score']}] {t['in_context']}") for t in summary["top_calls"][:examples]]
    return blocks


def training_blocks(runs: dict[str, Path]) -> list[Block]:
    blocks = [Block("h2", "Fine-tuning")]
    rows = []
    for label, folder in runs.items():
        s = json.loads((folder / "train_summary.json").read_text("utf-8"))
        evals = dict(s.get("evaluations") or [])
        best = evals.get(s.get("best_step"))
        rows.append((label, Path((s.get("config") or {}).get("data", "")).name,
                     s["counts"].get("training documents", ""), sum(s.get("tools", {}).values()),
                     s.get("best_step", ""), _fmt(evals.get(0)), _fmt(best), _fmt(s.get("wall_time_s"), 0)))
    blocks.append(Block("table", header=("run", "trained on", "training texts", "calls in data", "best step",
                                         "dev ppl at step 0", "dev ppl (best)", "seconds"), rows=rows))
    for label, folder in runs.items():
        if (folder / "training_curve.png").is_file():
            blocks.append(Block("img", f"training curve: {label}", path=str(folder / "training_curve.png")))
    return blocks


def eval_blocks(folder: Path) -> list[Block]:
    from .eval.report import breakdown_table, comparison_table

    summaries = json.loads((folder / "summary.json").read_text("utf-8"))
    blocks = [Block("h2", "Evaluation"),
              Block("p", "Accuracy in % with bootstrap 95% intervals. AC: examples with a call; NC: without."),
              md_table(comparison_table(summaries)), Block("h3", "With-call / without-call breakdown (Table 9)"),
              md_table(breakdown_table(summaries))]
    for name in ("accuracy.png", "breakdown.png"):
        if (folder / name).is_file():
            blocks.append(Block("img", name, path=str(folder / name)))
    return blocks


def _fmt(v, digits: int = 2) -> str:
    return "" if v is None or v == "" else f"{float(v):.{digits}f}"


def write(out: Path, blocks: Sequence[Block], title: str = "Toolformer run report") -> tuple[Path, Path]:
    """Write report.md (plots copied beside it) and a self-contained report.html."""
    import shutil

    out.mkdir(parents=True, exist_ok=True)
    local = []
    for i, b in enumerate(blocks):
        if b.kind == "img":
            name = f"{i:02d}-{Path(b.path).name}"
            shutil.copyfile(b.path, out / name)
            b = Block("img", b.text, path=name)
        local.append(b)
    md, page = out / "report.md", out / "report.html"
    md.write_text(to_markdown([Block("h1", title), *local]), encoding="utf-8")
    page.write_text(to_html([Block("h1", title), *blocks], title), encoding="utf-8")
    return md, page
