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
    cfg = pipeline.PipelineConfig(out=str(tmp_path), **settings)
    md, _ = pipeline.stage_report(cfg, tmp_path, tmp_path, {}, tmp_path, {"annotate": 1.0})
    return md.read_text(encoding="utf-8")


def test_report_states_a_different_sampler_as_a_deviation_before_the_settings(tmp_path, monkeypatch):
    text = _pipeline_report(tmp_path, monkeypatch, model="smollm2-135m", sampler_model="qwen2.5-coder-0.5b")
    assert text.index("## Deviations from the paper") < text.index("## Settings")
    line = next(ln for ln in text.splitlines() if "sampled by" in ln)
    assert "qwen2.5-coder-0.5b" in line and "smollm2-135m" in line and "one model M" in line
    for same in ("smollm2-135m", ""):
        assert "Deviations" not in _pipeline_report(tmp_path, monkeypatch, sampler_model=same)


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
