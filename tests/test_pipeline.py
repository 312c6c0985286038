"""Pure helpers of the end-to-end pipeline."""

from toolformer_kit.annotate.sources import _load_wiki
from toolformer_kit.pipeline import heldout_texts


def test_dev_texts_exclude_summaries_whose_windows_were_trained_on():
    """C* stores the annotated *window* of a long summary; the summary it came from must not
    become a dev text (that would score perplexity on training data)."""
    longest = max((v["extract"] for v in _load_wiki("en-us").values() if v.get("extract")), key=len)
    window = longest[: len(longest) // 2]
    everything = heldout_texts(set(), 100_000, seed=0)
    assert longest in everything
    assert longest not in heldout_texts({window, ""}, 100_000, seed=0)
    assert len(heldout_texts({window}, 100_000, seed=0)) == len(everything) - 1
