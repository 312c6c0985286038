"""A report as a list of blocks (heading, paragraph, table, image, code), rendered twice — a
markdown file and one self-contained HTML page — so the two cannot drift apart. HTML escapes every
piece of text (corpus text included) and inlines the PNG plots as data URIs, so the page can be
mailed or archived on its own. Shared by the pipeline's report and the experiment results.
"""

from __future__ import annotations

import base64
import html
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence


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


def write(out: Path, blocks: Sequence[Block], title: str = "Toolformer run report") -> tuple[Path, Path]:
    """Write report.md (plots copied beside it) and a self-contained report.html."""
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
