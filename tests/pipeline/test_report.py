import base64
import struct
import zlib

from toolformer_kit.blocks import Block, md_table, to_html, write


def _png(path):
    raw = b"\x00\xff\x00\x00"  # one red pixel
    def chunk(kind, data):
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))
    path.write_bytes(b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", 1, 1, 8, 2, 0, 0, 0))
                     + chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b""))


def test_report_escapes_text_and_inlines_plots(tmp_path):
    _png(tmp_path / "plot.png")
    evil = "<script>alert(1)</script> & [Calculator(1 + 1) -> 2]"
    blocks = [Block("h2", "Calls"), Block("p", evil), Block("table", header=("call",), rows=[(evil,)]),
              Block("img", "a plot", path=str(tmp_path / "plot.png"))]
    md, page = write(tmp_path / "report", blocks)
    html = page.read_text()
    assert "<script>" not in html and "&lt;script&gt;alert(1)&lt;/script&gt; &amp;" in html
    assert "data:image/png;base64," + base64.b64encode((tmp_path / "plot.png").read_bytes()).decode() in html
    text = md.read_text()
    assert evil in text and "![a plot](03-plot.png)" in text
    assert (tmp_path / "report" / "03-plot.png").is_file()


def test_md_table_round_trip():
    table = md_table("| task | a (k10) |\n|---|---|\n| svamp | 50.0 [40.0, 60.0] |\n")
    assert table.header == ["task", "a (k10)"] and table.rows == [["svamp", "50.0 [40.0, 60.0]"]]
    assert "<td>50.0 [40.0, 60.0]</td>" in to_html([table], "t")


# ---------------------------------------------------------------- deviations and measured tools (issue 13)
def _pipeline_report(tmp_path, monkeypatch, **settings):
    from toolformer_kit.pipeline import report, run as pipeline

    for name in ("annotation_blocks", "training_blocks", "eval_blocks"):
        monkeypatch.setattr(report, name, lambda *a: [])
    cstar = settings.pop("cstar", None)
    cfg = pipeline.PipelineConfig(out=str(tmp_path), **settings)
    md, _ = report.write_report(cfg, tmp_path, tmp_path, {}, tmp_path, {"annotate": 1.0}, cstar)
    return md.read_text(encoding="utf-8")


def test_report_states_a_different_sampler_as_a_deviation_before_the_settings(tmp_path, monkeypatch):
    text = _pipeline_report(tmp_path, monkeypatch, model="smollm2-135m", sampler_model="qwen2.5-coder-0.5b")
    assert text.index("## Deviations from the paper") < text.index("## Settings")
    line = next(ln for ln in text.splitlines() if "sampled by" in ln)
    assert "qwen2.5-coder-0.5b" in line and "smollm2-135m" in line and "one model M" in line
    for same in ("smollm2-135m", ""):
        assert "sampled by" not in _pipeline_report(tmp_path, monkeypatch, model="smollm2-135m", sampler_model=same)


def test_report_opens_with_what_the_run_is_and_where_the_evidence_is(tmp_path, monkeypatch):
    """issue 43, item 2: first what the run is and what it learned from; then the committed
    results, read from the repository (no stale hand-written pointer)."""
    import json

    from toolformer_kit.pipeline import fresh

    annotated = tmp_path / "annotate"
    annotated.mkdir()
    (annotated / "corpus.jsonl").write_text(json.dumps({"id": "g#1", "text": "[Calculator(2 * 3) -> 6] 6",
                                                        "calls": [{"tool": "Calculator"}]}) + "\n")
    files = fresh.joined(annotated, ["datasets/cstar-math"], tmp_path / "train-data")
    text = _pipeline_report(tmp_path, monkeypatch, cstar=files["cstar.jsonl"])
    sections = [line for line in text.splitlines() if line.startswith("## ")]
    assert sections[:2] == ["## What this run is", "## Verdict"]
    about = text[text.index("## What this run is"): text.index("## Verdict")]
    assert "A demonstration sized for a laptop. qwen2.5-coder-0.5b annotates 8 fresh windows" in about
    assert "keeps 1 calls in 1 texts" in about and "datasets/cstar-math: 300 calls in 192 texts" in about
    assert "301 calls in all" in about and "100 problems per task" in about
    assert "| results/math | math — Calculator on SVAMP, ASDiv and MAWPS | pooled tools − disabled +26.0 [+22.6, " \
           "+29.3] points, endpoint met |" in about
    assert "| results/search | " in about and "superseded (see its report)" in about
    assert "search-try0 (null)" not in text
    smoke = _pipeline_report(tmp_path, monkeypatch, corpus="default", cstar_datasets=[], model="smollm2-135m")
    assert "A smoke run: smollm2-135m on the embedded mixed corpus" in smoke


def test_report_says_which_tool_each_task_exercises(tmp_path, monkeypatch):
    text = _pipeline_report(tmp_path, monkeypatch, tasks=["svamp", "dateset", "webquestions"],
                            tools=["Calculator", "WikiSearch", "Calendar", "MT"])
    assert "| svamp | Calculator | yes |" in text and "| dateset | Calendar | yes |" in text
    assert "| webquestions | WikiSearch | yes |" in text
    assert "Annotated but measured by no task here: MT." in text


def test_a_tasks_own_exercises_field_wins_over_the_fallback(monkeypatch):
    from toolformer_kit.eval.tasks import get_task
    from toolformer_kit.pipeline.report import exercised

    monkeypatch.setattr(get_task("wikitext2"), "exercises", "WikiSearch", raising=False)
    assert exercised("wikitext2") == "WikiSearch" and exercised("webquestions") == "WikiSearch"
