"""annotate.math_corpus.solution_windows: the read-only left part of a document survives the cut."""

from toolformer_kit.annotate.document import Document
from toolformer_kit.annotate.math_corpus import solution_windows


def words(s: str) -> int:
    return len(s.split())


def test_a_documents_own_context_stays_read_only_in_every_window():
    text = "Intro words here. More intro now. Quote starts here. Then the body goes on. And ends."
    doc = Document("d", text, {}, context_chars=text.index(" Quote"))
    (one,), _ = solution_windows([doc], 100, words, 0)
    assert one.context_chars == doc.context_chars  # one window: as the document says
    ws, counts = solution_windows([doc], 6, words, 0)
    assert counts["split_into_windows"] == 1 and len(ws) > 1
    first = ws[0]
    assert first.text[first.context_chars:].lstrip().startswith("Quote")  # no call before the quote
    assert all(w.context_chars >= 0 for w in ws)
