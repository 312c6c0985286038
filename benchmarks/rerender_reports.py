"""Re-render every committed results/ report from its results.json and compare with report.md.

Why: a refactoring must not change what the evidence says (issue 45). Each report is a pure
function of its results.json (plus the names of the PNGs beside it), so rendering it again with
today's code and comparing it byte for byte with the committed report.md shows whether the code
still writes the same evidence. Prints one line per folder (same / differs / not a rendered kind)
and, with ``--diff``, the first differing lines. Exit status 1 when any report differs.

Some committed reports differ from any rendering on purpose: a banner or a provenance section
written in by hand after the run (results/search's Superseded banner), or a report written by an
older writer. For a refactoring, render once before it (``--write-rendered DIR``) and compare after
it with ``--against DIR``: the code must write the same bytes as before.

    python benchmarks/rerender_reports.py [--results results] [--diff] [--write-rendered DIR] [--against DIR]
"""

from __future__ import annotations

import argparse
import difflib
import json
import sys
from pathlib import Path

from toolformer_kit import blocks as R
from toolformer_kit.experiment import report as experiment_report
from toolformer_kit.study import chaining, report as study_report

EXPERIMENT_PLOTS = (("accuracy per task and column", "accuracy.png"), ("tool-use funnel", "funnel.png"))


def kind_of(res: dict) -> str | None:
    """Which writer made this results.json: an experiment, a study or the chaining measurement."""
    if "recipe" in res:
        return "experiment"
    if "study" in res:
        return "study"
    if "rounds" in res:
        return "chaining"
    return None


def render(res: dict, folder: Path) -> str:
    """The report.md today's code writes for ``res`` (the PNGs named as they lie in ``folder``)."""
    kind = kind_of(res)
    if kind == "experiment":
        plots = [(label, name) for label, name in EXPERIMENT_PLOTS if (folder / name).exists()]
        title = f"Evidence: {res['recipe']}" + (f" — {res['description']}" if res.get("description") else "")
        return R.to_markdown([R.Block("h1", title), *experiment_report.report_blocks(res, plots)])
    if kind == "study":
        if res["study"] == "scale":
            plots = {"scale": "scaling.png"} if (folder / "scaling.png").exists() else {}
        else:
            plots = {r: f"{res['study']}-{r}.png" for r in res["recipes"]
                     if (folder / f"{res['study']}-{r}.png").exists()}
        return R.to_markdown(study_report.report_blocks(res, plots))
    plot = "budget.png" if (folder / "budget.png").exists() else None
    return R.to_markdown(chaining.report_blocks(res, plot))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--results", default="results")
    ap.add_argument("--diff", action="store_true", help="print the first differing lines")
    ap.add_argument("--write-rendered", default="", help="also write each rendering to DIR/NAME.md")
    ap.add_argument("--against", default="", help="compare with DIR/NAME.md (an earlier rendering), not report.md")
    args = ap.parse_args(argv)
    differs = 0
    for path in sorted(Path(args.results).glob("*/results.json")):
        folder = path.parent
        res = json.loads(path.read_text(encoding="utf-8"))
        if kind_of(res) is None:
            print(f"{folder.name}: not a rendered kind (written by a benchmark script)")
            continue
        reference = Path(args.against) / f"{folder.name}.md" if args.against else folder / "report.md"
        new, old = render(res, folder), reference.read_text(encoding="utf-8")
        if args.write_rendered:
            Path(args.write_rendered).mkdir(parents=True, exist_ok=True)
            (Path(args.write_rendered) / f"{folder.name}.md").write_text(new, encoding="utf-8")
        same = new == old
        differs += not same
        print(f"{folder.name}: {'same' if same else 'differs'} ({kind_of(res)})")
        if not same and args.diff:
            lines = difflib.unified_diff(old.splitlines(), new.splitlines(), "committed", "rendered", n=0, lineterm="")
            print("\n".join(list(lines)[:12]))
    print(f"{differs} of the rendered reports differ from {args.against or 'the committed report.md'}")
    return 1 if differs else 0


if __name__ == "__main__":
    sys.exit(main())
