"""What annotation does differently for one tool, in one table: the only place a built-in tool's
name decides anything during annotation.

Why one table: the Calculator's and the MT's pre-filters (Appendix A), the Calendar's binding to a
text's own date, the MT's leak check and the corpus the search tools read were each switched on by
the tool's name in a different module (stages, build), so adding a built-in tool meant finding
every such ``if``. Now a tool with special handling has one :data:`HOOKS` entry; any other tool,
a user's included, gets :data:`PLAIN` (no pre-filter, executed as it is, never a leak).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Optional

from ..tools.calendar import calendar_tool_for, document_date
from ..tools.qa import qa_tool
from ..tools.wikisearch import wikisearch_tool
from .document import Document
from .prefilters import calculator_keep, mt_keep, mt_leaks


@dataclass(frozen=True)
class AnnotationHooks:
    """A tool's special handling during annotation; None: the default.

    ``keep(doc, cfg)``: its pre-filter (False skips the text for this tool, counted as
    ``skipped_prefilter``). ``bind(tool, doc)``: the tool object that runs calls in ``doc``, or None
    where it cannot serve it (counted as ``skipped_no_date``). ``leaks(text, offset, input)``: a
    sampled call that only copies what follows it, dropped before execution. ``on_corpus(path)``:
    the tool rebuilt to read ``--wiki-corpus``.
    """

    keep: Optional[Callable[[Document, object], bool]] = None
    bind: Optional[Callable[[object, Document], object]] = None
    leaks: Optional[Callable[[str, int, str], bool]] = None
    on_corpus: Optional[Callable[[str], object]] = None


def _calendar_for(tool, doc: Document):
    """The Calendar bound to the document's own date (none: the text is not dated)."""
    date = document_date(doc.record())
    return calendar_tool_for(date) if date else None


HOOKS: dict[str, AnnotationHooks] = {
    "Calculator": AnnotationHooks(keep=lambda d, cfg: calculator_keep(d.text, d.doc_id, cfg.seed, cfg.calculator_rate)),
    "MT": AnnotationHooks(keep=lambda d, cfg: mt_keep(d.text, cfg.mt_confidence), leaks=mt_leaks),
    "Calendar": AnnotationHooks(bind=_calendar_for),
    "WikiSearch": AnnotationHooks(on_corpus=lambda corpus: wikisearch_tool(corpus=corpus)),
    "QA": AnnotationHooks(on_corpus=lambda corpus: qa_tool(corpus=corpus)),
}
PLAIN = AnnotationHooks()


def hooks(name: str) -> AnnotationHooks:
    """The hooks of tool ``name`` (:data:`PLAIN` for a tool without an entry).

    >>> hooks("Calendar").bind is not None, hooks("MyTool") is PLAIN
    (True, True)
    """
    return HOOKS.get(name, PLAIN)
