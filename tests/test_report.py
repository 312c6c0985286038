import base64
import struct
import zlib

from toolformer_kit.report import Block, md_table, to_html, write


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
