"""What a tool is: a name, a text → text function, demonstrations, and its annotation settings.

A tool's demonstrations are (input text, the same text with calls written in) pairs. They build
the annotation prompt P(x) of the paper: an instruction, the worked examples, then
``Input: x`` / ``Output:`` after which the model re-writes x and may open calls. The part up to
and including the last demonstration is shared by every document (:meth:`Tool.prompt_prefix`),
so its KV cache can be computed once; ``Input: x\\nOutput:`` (:meth:`Tool.prompt_context`) is
per document.

>>> echo = Tool("Echo", lambda s: s.upper(), "Repeat words loudly.", [("I say hi.", "I say [Echo(hi) -> HI] hi.")])
>>> print(echo.prompt_prefix() + echo.prompt_context("You say bye."))
Repeat words loudly.
<BLANKLINE>
Input: I say hi.
Output: I say [Echo(hi) -> HI] hi.
<BLANKLINE>
Input: You say bye.
Output:
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Optional

from ..registry import Registry


@dataclass(frozen=True)
class AnnotationSettings:
    """The paper's per-tool sampling and filtering thresholds (§2, Appendix A)."""

    tau_s: float = 0.05  # keep positions with p_i > tau_s
    k: int = 5  # at most this many positions per document
    m: int = 5  # calls sampled per position
    tau_f: float = 1.0  # keep a call if L- - L+ >= tau_f


PAPER_DEFAULT = AnnotationSettings()
PAPER_CALCULATOR_MT = AnnotationSettings(tau_s=0.0, k=20, m=10, tau_f=0.5)


@dataclass
class Tool:
    """A callable tool. ``fn`` returns the result text, or None for "no result"."""

    name: str
    fn: Callable[[str], Optional[str]]
    instruction: str
    demonstrations: list[tuple[str, str]]
    settings: AnnotationSettings = field(default_factory=AnnotationSettings)
    description: str = ""

    def __call__(self, text: str) -> Optional[str]:
        return self.fn(text)

    def prompt_prefix(self) -> str:
        if not self.demonstrations:
            raise ValueError(f"tool {self.name} has no demonstrations; add 3-8 (input, output) "
                             "pairs showing where its calls go")
        blocks = [self.instruction.strip()]
        blocks += [f"Input: {x}\nOutput: {y}" for x, y in self.demonstrations]
        return "\n\n".join(blocks) + "\n\nInput: "

    @staticmethod
    def prompt_context(text: str) -> str:
        return f"{text}\nOutput:"


TOOLS: Registry[Tool] = Registry("tool")
