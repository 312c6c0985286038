"""A document to annotate and the error an unusable corpus raises: what both the corpus reader
(:mod:`.corpus`) and the embedded corpus (:mod:`.sources`) produce, so neither imports the other
for it."""

from __future__ import annotations

from dataclasses import dataclass, field

from ..config import ConfigError


@dataclass
class Document:
    """One text to annotate; ``meta`` holds every other field of the source record."""

    doc_id: str
    text: str
    meta: dict = field(default_factory=dict)
    context_chars: int = 0  # a window's left context: text[:context_chars] is read, never annotated

    def record(self) -> dict:
        """The document as a plain mapping (what date finders and C* writers read)."""
        rec = {**self.meta, "id": self.doc_id, "text": self.text}
        if self.context_chars:
            rec["context_chars"] = self.context_chars
        return rec



class CorpusError(ConfigError):
    """The corpus cannot be used; the message names the problem and the fix."""
