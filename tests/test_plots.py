"""plots.py: one lazy matplotlib loader that draws to files only, and a save that frees the figure."""

from toolformer_kit.plots import pyplot, save


def test_save_writes_a_png_and_closes_the_figure(tmp_path):
    plt = pyplot()
    assert plt.get_backend().lower() == "agg"  # never a window
    fig, ax = plt.subplots()
    ax.plot([1, 2, 3], [3, 1, 2])
    path = save(fig, tmp_path / "p.png")
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert fig.number not in plt.get_fignums()
