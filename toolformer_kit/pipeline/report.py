"""The end-to-end report: one self-contained HTML file and a markdown copy of the same content.

The report is a list of :class:`~toolformer_kit.blocks.Block` (heading, paragraph, table, image),
rendered by :func:`~toolformer_kit.blocks.write`; this module decides what goes in it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Mapping, Sequence

from ..annotate import records as R
from ..annotate.config import PAPER_MODEL_NOTE
from ..annotate.summary import kept_at, kept_table_of
from ..blocks import Block, md_table, write
from ..config import recorded
from ..eval.report import breakdown_table, comparison_table
from ..eval.tasks import get_task
from ..eval.verdict import headline_rows, tools_setting, verdict_blocks
from ..files import read_json, read_jsonl
from ..registry import UnknownNameError
from ..tools import get_tool
from ..tools.base import PAPER_DEFAULT, AnnotationSettings
from . import examples, fresh
from .config import PipelineConfig


# A C* smaller than this is a smoke test of the method, not evidence about its effect.
SMOKE_CALLS = 100
REPO = Path(__file__).resolve().parents[2]


def scale_note(calls: int | None, texts: int | None) -> str:
    """What a run's C* size lets its verdict say.

    >>> scale_note(7, 5).startswith("This run is smoke-sized: its C* holds 7 calls in 5 texts")
    True
    >>> scale_note(400, 300)
    ''
    """
    if calls is None or calls >= SMOKE_CALLS:
        return ""
    met = [folder for folder, _, endpoint in committed_results() if endpoint.startswith("pooled")
           and endpoint.endswith("endpoint met")]
    return (f"This run is smoke-sized: its C* holds {calls} calls in {texts} texts, too few for the effect of "
            "tool use to show (the paper's C* per tool holds thousands); it checks that every stage runs. "
            "The evidence about the effect is in the committed results listed under \"What this run is\""
            + (f"; those that met their pre-registered endpoint: {', '.join(met)}." if met else "."))


def committed_results(root: Path = REPO) -> list[tuple[str, str, str]]:
    """(folder, title, pre-registered endpoint or "") of every ``results/NAME/report.md`` in the
    repository, read from the files, so the list cannot go stale as results are added."""
    out = []
    for md in sorted((root / "results").glob("*/report.md")):
        lines = md.read_text(encoding="utf-8").splitlines()
        title = next((line[2:].strip() for line in lines if line.startswith("# ")), md.parent.name)
        endpoint = _endpoint(md.parent / "results.json")
        if any(line.startswith(SUPERSEDED) for line in lines[:6]):  # a later audit's banner under the title
            endpoint = "superseded (see its report)" + (f"; was: {endpoint}" if endpoint else "")
        out.append((f"results/{md.parent.name}", title.split(": ", 1)[-1] if title.startswith(("Evidence", "Study"))
                    else title, endpoint))
    return out


SUPERSEDED = "> **Superseded**"


def _endpoint(path: Path) -> str:
    try:
        e = read_json(path).get("endpoint") or {}
    except Exception:  # a results folder without results.json, or another layout: title only
        return ""
    if e.get("pooled_diff") is None or not e.get("pooled_ci95"):
        return ""
    lo, hi = e["pooled_ci95"]
    return (f"pooled tools − disabled {100 * e['pooled_diff']:+.1f} [{100 * lo:+.1f}, {100 * hi:+.1f}] points, "
            f"endpoint {'met' if e.get('met') else 'not met'}")


def about_blocks(settings: Mapping, sources: Mapping[str, Mapping[str, int]],
                 results: Sequence[tuple[str, str, str]]) -> list[Block]:
    """The report's first section (issue 43): what this run is, what it learned from, and where
    the full evidence is. ``sources``: texts and calls of the training C* per origin."""
    own = sources.get("this run", {"texts": 0, "calls": 0})
    published = {k: v for k, v in sources.items() if k != "this run"}
    total = sum(v["calls"] for v in sources.values())
    if settings.get("corpus") == "math":
        what = (f"A demonstration sized for a laptop. {settings['model']} annotates {settings['fresh_windows']} fresh "
                "windows of the maths corpus (GSM8K prose solutions and arithmetic Wikipedia summaries that no "
                f"published dataset annotated) with {', '.join(settings['tools'])} at the paper's settings, one "
                f"model M sampling and scoring, and keeps {own['calls']} calls in {own['texts']} texts.")
    else:
        what = (f"A smoke run: {settings['model']} on the embedded mixed corpus, {settings['docs_per_source']} "
                f"documents per source, annotated with {', '.join(settings['tools'])}; this run keeps "
                f"{own['calls']} calls in {own['texts']} texts. It shows that every stage runs, not an effect.")
    if published:
        joined = "; ".join(f"{k}: {v['calls']} calls in {v['texts']} texts" for k, v in published.items())
        what += (f" Fine-tuning learns from those joined with the published C* ({joined}), {total} calls in all, "
                 f"for {settings['train_steps']} steps of {settings['train_batch']} sequences.")
    what += (f" Evaluation: {settings['eval_limit']} problems per task, the tool-trained model with the paper's "
             "decoding against the same model with calls disabled, paired.")
    rows = [(folder, title, endpoint or "–") for folder, title, endpoint in results]
    return [Block("h2", "What this run is"), Block("p", what),
            Block("p", "The full evidence is in the repository's results/ (each folder's report.md opens with its "
                       "verdict); the maths effect at full size is results/math."),
            Block("table", header=("results", "what", "pre-registered endpoint"), rows=rows)]


def pipeline_verdict(eval_folder: Path, tasks: Sequence[str], n_resamples: int = 1000, seed: int = 0,
                     cstar: tuple[int | None, int | None] = (None, None)) -> list[Block]:
    """The pipeline report's opening: the same verdict table over its eval folder, and what the
    run's C* size (calls, texts) lets it say."""
    on = tools_setting(eval_folder)
    rows = headline_rows(eval_folder, tasks, on.name, n_resamples, seed) if on else []
    helped = [r["task"] for r in rows if not r.get("pooled") and r["all"]["diff_ci95"] and r["all"]["diff_ci95"][0] > 0]
    text = (f"Tools help, with the paired interval above 0, on: {', '.join(helped)}." if helped else
            "On no task is the paired difference (tools − disabled) clearly above 0.") if rows else ""
    note = scale_note(*cstar)
    return verdict_blocks(rows, f"{note} {text}".strip())


def deviations(settings: Mapping) -> list[str]:
    """The ways a run departs from the paper's method, one sentence each, so a reader sees them
    before any number. ``settings`` is the run's config as a mapping (``config.to_dict``): a
    pipeline's or an experiment's. One list of rules serves both reports; a rule speaks only of
    settings the run has (a pipeline has no ``lora`` or ``references``).

    >>> deviations({"model": "smollm2-135m", "sampler_model": "smollm2-135m"})
    []
    >>> print(deviations({"model": "smollm2-135m", "sampler_model": "qwen2.5-coder-0.5b"})[0])
    Calls are sampled by qwen2.5-coder-0.5b but scored and fine-tuned with smollm2-135m; the paper samples, scores and fine-tunes with one model M (§2).
    """
    return [line for rule in DEVIATION_RULES if (line := rule(settings))]


def _fine_tuning(s: Mapping) -> str | None:
    if "lora" not in s:
        return None
    how = "LoRA" if s["lora"] else f"full fine-tuning of {s['model']}"
    return (f"Fine-tuning is {how} for {s['train_steps']} steps of {s['train_batch']} sequences of ≤ "
            f"{s['max_length']} tokens on a CPU, not full fine-tuning of GPT-J (6.7B) with batch 128 for up to "
            "2,000 steps.")


def _sampler(s: Mapping) -> str | None:
    model, sampler = s.get("model", ""), s.get("sampler_model", "")
    if sampler and sampler != model:
        return f"Calls are sampled by {sampler} but scored and fine-tuned with {model}; {PAPER_MODEL_NOTE}."
    return None


def _cc_data(s: Mapping) -> str | None:
    if s.get("cc_data") == "cstar":
        return "+CC is fine-tuned on the texts of C* only (calls removed), not on every annotated text as in the paper."
    return None


def _dev_source(s: Mapping) -> str | None:
    if s.get("dev_source") == "wiki":
        return ("Dev perplexity uses Wikipedia summaries only, not held-out documents of the annotated corpus's own "
                "sources as in the paper.")
    return None


def _k_m(s: Mapping) -> str | None:
    """A deviation only where k or m differs from the paper's value for a tool annotated (k 5 and
    m 5 are the paper's for WikiSearch, QA and Calendar).

    >>> _k_m({"k": 5, "m": 5, "tools": ["WikiSearch", "QA"]}) is None
    True
    >>> _k_m({"k": 5, "m": 3, "tools": ["Calculator"]})[:60]
    'Annotation takes k = 5 positions and m = 3 calls per positio'
    """
    k, m = s.get("k"), s.get("m")
    if not (k or m):
        return None
    tools = s.get("tools") or []
    paper = {t: _paper_settings(t) for t in tools}
    if tools and not any((k and k != p.k) or (m and m != p.m) for p in paper.values()):
        return None
    return (f"Annotation takes k = {k or 'per tool'} positions and m = {m or 'per tool'} calls "
            "per position (the paper: 5 and 5; Calculator and MT 20 and 10) to fit the time budget.")


def _paper_settings(tool: str) -> AnnotationSettings:
    """A tool's own annotation settings (the paper's, for a built-in tool), as its registry entry
    holds them; a tool a record names that is not registered here (a user tool) gets the paper's
    default."""
    try:
        return get_tool(tool).settings
    except UnknownNameError:
        return PAPER_DEFAULT


def _thresholds(s: Mapping) -> str | None:
    tau_s, tau_f = s.get("tau_s"), s.get("tau_f")
    if tau_s is None and tau_f is None:
        return None
    return (f"Thresholds τs = {tau_s if tau_s is not None else 'per tool'}, τf = "
            f"{tau_f if tau_f is not None else 'per tool'} for every tool (the paper: τs 0.05 and τf 1.0; "
            "Calculator τs 0 and τf 0.5).")


def _forced_arrow(s: Mapping) -> str | None:
    if s.get("eval_force_arrow"):
        return ("The tool-trained model is also evaluated with '->' forced once a call's input is closed (reported "
                "beside, never in place of, the paper's decoding, which waits for the model's '->').")
    return None


def _drop_empty(s: Mapping) -> str | None:
    if s.get("eval_drop_empty"):
        return ("The tool-trained model is also evaluated with a call that found nothing taken out of the text "
                "before it goes on (reported beside, never in place of, the paper's decoding, which writes "
                "'Tool(input) ->]' and continues).")
    return None


def _references(s: Mapping) -> str | None:
    if "references" in s and not s["references"]:
        if s.get("base_reference"):
            return ("+CC is not trained or evaluated here (references off): the tool-trained model with tools and "
                    "with calls disabled, which is what Figure 4 compares, and the base model with calls disabled.")
        return ("The base model and +CC are not trained or evaluated here (references off): only the tool-trained "
                "model with tools and with calls disabled, which is what Figure 4 compares.")
    return None


def _lama_search(s: Mapping) -> str | None:
    if s.get("lama_search"):
        return ("WikiSearch may run on LAMA, which the paper forbids (LAMA's facts come from Wikipedia); here it is "
                "the only tool trained, so without it LAMA would measure no tool at all.")
    return None


def _search_corpus(s: Mapping) -> str | None:
    if "lama_search" in s and "WikiSearch" in (s.get("tools") or ()):  # runs that set how search is evaluated
        return ("WikiSearch searches 10,033 Wikipedia lead summaries (BM25), not all of Wikipedia; the retrieval "
                "ceiling says how often the answer is there at all.")
    return None


# In the order the reports print them.
DEVIATION_RULES = (_fine_tuning, _sampler, _cc_data, _dev_source, _k_m, _thresholds, _forced_arrow, _drop_empty,
                   _references, _lama_search, _search_corpus)


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
    summary = read_json(folder / "summary.json")
    blocks = [Block("h2", "Annotation (the paper's Table 2 and Table 10)"),
              Block("p", f"{summary['corpus']['documents']} documents; {summary['c_star_texts']} texts "
                         "in C* with at least one kept call.")]
    header = ["tool", "sampled", "scored"] + [f"kept at τf={t} (candidates, before merging)" for t in taus]
    rows = []
    table = kept_table_of(summary)
    for tool, counts in summary["tools"].items():
        kept = table.get(tool, {})
        rows.append([tool, counts.get("samples", counts.get("sampled", "")), kept.get("scored", 0)] +
                    [f"{kept_at(kept, t)['calls']} calls / {kept_at(kept, t)['texts']} texts" for t in taus])
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
        s = read_json(folder / "train_summary.json")
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
    summaries = read_json(folder / "summary.json")
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


def _cstar_size(cstar: Path) -> tuple[int | None, int | None]:
    """Calls and texts in the C* the tool run trained on, for the verdict's sense of scale."""
    if not cstar.is_file():
        return None, None
    rows = read_jsonl(cstar, f"delete {cstar.parent} to make it again")
    return sum(len(r.get("calls") or []) for r in rows), len(rows)


def write_report(cfg: PipelineConfig, out: Path, annotated: Path, trained: dict, evaluated: Path,
                 timings: dict, cstar: Path | None = None, picked: list | None = None) -> tuple[Path, Path]:
    """The pipeline's report in ``out/report.{md,html}``: what the run is and its verdict first, then
    its worked examples, settings, stage timings, and each stage's own tables."""
    settings = recorded(cfg)
    cstar = cstar or annotated / "corpus.jsonl"
    sources = fresh.provenance(cstar) if cstar.is_file() else {}  # rows without "from" are this run's
    blocks = about_blocks(settings, sources, committed_results())  # what the run is, first
    blocks += pipeline_verdict(evaluated, cfg.tasks, seed=cfg.seed, cstar=_cstar_size(cstar))
    blocks += examples.blocks(picked or [], Path(cfg.out) / "train-tools")
    blocks += deviation_blocks(settings) + [Block("h2", "Settings"),
              Block("table", header=("setting", "value"), rows=[(k, v) for k, v in settings.items()]),
              Block("table", header=("stage", "seconds"), rows=[(k, f"{v:.0f}") for k, v in timings.items()])]
    blocks += annotation_blocks(annotated)
    blocks += training_blocks(trained)
    blocks += task_tool_blocks(cfg.tasks, cfg.tools)
    blocks += eval_blocks(evaluated)
    return write(out / "report", blocks)
