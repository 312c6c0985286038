"""What a tool is: a name, a text → text function, demonstrations, and its annotation settings.

A tool's demonstrations are (input text, the same text with calls written in) pairs. They build
the annotation prompt P(x) of the paper: an instruction, the worked examples, then
``Input: x`` / ``Output:`` after which the model re-writes x and may open calls. The part up to
and including the last demonstration is shared by every document (:meth:`Tool.prompt_prefix`),
so its KV cache can be computed once; `` x\\nOutput:`` (:meth:`Tool.prompt_context`) is
per document. The cut lies between ``Input:`` and the space before the text, so that the text's
first token is the one it has inside every demonstration (":" then " The", never ":", " ", "The"):
both halves are tokenized separately, and a cut after the space would leave a lone " " token.

Input checks live here, not in each tool, so that every tool (built-in or a user's) refuses
empty, oversized and binary inputs with the same one-line message (:meth:`Tool.check_input`).

>>> echo = Tool("Echo", lambda s: s.upper(), "Repeat words loudly.", [("I say hi.", "I say [Echo(hi) -> HI] hi.")])
>>> print(echo.prompt_prefix() + echo.prompt_context("You say bye."))
Repeat words loudly.
<BLANKLINE>
Input: I say hi.
Output: I say [Echo(hi) -> HI] hi.
<BLANKLINE>
Input: You say bye.
Output:
>>> echo("hi [there]")
'HI (THERE)'
>>> echo.check_input("")
'empty input: Echo needs some text, as in [Echo(hi)]'
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field, replace
from typing import Callable, Optional, Sequence

from ..calls import normalize_result
from ..registry import Registry

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class AnnotationSettings:
    """The paper's per-tool sampling and filtering thresholds (§2, Appendix A)."""

    tau_s: float = 0.05  # keep positions with p_i > tau_s
    k: int = 5  # at most this many positions per document
    m: int = 5  # calls sampled per position
    tau_f: float = 1.0  # keep a call if L- - L+ >= tau_f
    call_cost: float = 0.0  # λ, nats: keep only if L- - L+ >= tau_f + λ (not the paper's; 0 = its rule)


PAPER_DEFAULT = AnnotationSettings()
PAPER_CALCULATOR_MT = AnnotationSettings(tau_s=0.0, k=20, m=10, tau_f=0.5)

MAX_INPUT_CHARS = 1000
MAX_RESULT_CHARS = 400


def input_problem(text: object, tool: str, takes_input: bool = True,
                  max_chars: int = MAX_INPUT_CHARS, example: str = "hi") -> Optional[str]:
    """Why ``text`` cannot be given to ``tool`` (one line naming the problem and the fix), or None.

    >>> input_problem("x" * 5000, "QA")
    'input too long: QA accepts at most 1000 characters, got 5000; shorten the input'
    >>> input_problem("a\\x00b", "QA")
    'binary input: QA takes plain text, but the input holds control bytes (e.g. 0x00)'
    >>> input_problem(b"abc", "QA")
    'input must be text (str), not bytes; decode it first'
    >>> input_problem("", "Calendar", takes_input=False) is None
    True
    """
    if not isinstance(text, str):
        return f"input must be text (str), not {type(text).__name__}; decode it first"
    if len(text) > max_chars:
        return f"input too long: {tool} accepts at most {max_chars} characters, got {len(text)}; shorten the input"
    bad = next((ch for ch in text if (ord(ch) < 32 and ch not in "\t\n\r") or ch in "\x7f\ufffd"), None)
    if bad is not None:
        return (f"binary input: {tool} takes plain text, but the input holds control bytes "
                f"(e.g. 0x{ord(bad):02x})")
    if takes_input and not text.strip():
        return f"empty input: {tool} needs some text, as in [{tool}({example})]"
    return None


def clean_result(value: object, max_chars: int = MAX_RESULT_CHARS) -> Optional[str]:
    """A result as it can sit inline in text: one line, no square brackets, bounded; None if empty.

    >>> clean_result(42), clean_result("  "), clean_result(None)
    ('42', None, None)
    >>> clean_result("word " * 10, max_chars=22)
    'word word word word…'
    """
    if value is None:
        return None
    text = normalize_result(str(value))
    if len(text) > max_chars:
        cut = text[: max_chars - 1]
        text = (cut.rsplit(" ", 1)[0] if " " in cut else cut) + "…"
    return text or None


def fits_grammar(text: str, grammar: Optional[str]) -> bool:
    """Whether a call input holds only the characters of a tool's ``input_grammar`` (None: any).

    >>> fits_grammar("(25 - 5) / 4", "0123456789+-*/(). "), fits_grammar("twenty / 4", "0123456789+-*/(). ")
    (True, False)
    >>> fits_grammar("", ""), fits_grammar("today", ""), fits_grammar("anything", None)
    (True, False, True)
    """
    return grammar is None or all(ch in grammar for ch in text)


@dataclass
class Tool:
    """A callable tool. ``fn`` returns the result text, or None for "no result".

    Fields beyond the first five are optional knobs for the execution engine: ``takes_input``
    (False for tools such as Calendar that ignore their input), ``cacheable`` (False where the
    result depends on more than the input, e.g. the date), ``version`` (part of the cache key, so
    a different model or corpus never serves stale results), ``timeout`` (seconds; overrides the
    engine's), ``concurrency`` (most calls at once; 1 for a tool behind one model) and
    ``prepare`` (slow one-off setup, such as loading a model, that the engine runs before timing
    calls). ``example_input`` and ``no_result_hint`` make messages concrete.

    ``input_grammar`` (optional) is the tool's input grammar at the character level: the
    characters an input may hold (the Calculator's digits, operators, parentheses, point and
    spaces), ``""`` for a tool whose input is empty (Calendar), None for free text. Decoding may
    constrain a call's input to it (``DecodeConfig.constrain_inputs``, an option beside the
    unconstrained decoding, never instead of it: typed tool inputs are a critique of the method,
    not part of the paper). :func:`fits_grammar` says whether a whole input fits.

    ``exclude`` (optional) is for a tool that searches a corpus which may hold the very text being
    annotated (WikiSearch, QA, a user tool over its own index): ``exclude(text, title)`` gives
    ``(fn, batch_fn, key)`` that never return that document, and :meth:`without_document` puts
    them in place, ``key`` in the version (so cached results of one document never serve
    another). Without it a tool that reads the annotated text back teaches copying, not look-up.

    ``batch_fn`` (optional) answers many inputs at once, one result or None per input, in order:
    a tool behind a model answers a batch in one generation pass instead of one pass per call
    (the QA reader: ~1.4 s per call alone on two CPU cores). The engine hands it at most
    ``batch_size`` inputs at a time; it must give what ``fn`` would give for each input.
    """

    name: str
    fn: Callable[[str], Optional[str]]
    instruction: str
    demonstrations: list[tuple[str, str]]
    settings: AnnotationSettings = field(default_factory=AnnotationSettings)
    description: str = ""
    takes_input: bool = True
    max_input_chars: int = MAX_INPUT_CHARS
    cacheable: bool = True
    version: str = ""
    timeout: Optional[float] = None
    concurrency: Optional[int] = None
    prepare: Optional[Callable[[], None]] = None
    example_input: str = "hi"
    no_result_hint: str = "the tool found nothing for this input"
    batch_fn: Optional[Callable[[Sequence[str]], Sequence[Optional[str]]]] = None
    batch_size: int = 32
    input_grammar: Optional[str] = None
    exclude: Optional[Callable[[str, str], tuple]] = None

    def without_document(self, text: str, title: str = "") -> "Tool":
        """This tool as it runs while ``text`` (titled ``title``) is annotated: searching its corpus
        without that document, where the tool searches one (``exclude``); else the tool itself.

        >>> t = Tool("Echo", str, "", [], exclude=lambda text, title: (lambda q: q + "!", None, "k1"))
        >>> t.without_document("some text").fn("hi"), t.without_document("some text").version
        ('hi!', '|not:k1')
        """
        if self.exclude is None:
            return self
        fn, batch_fn, key = self.exclude(text, title)
        return replace(self, fn=fn, batch_fn=batch_fn, version=f"{self.version}|not:{key}")

    def __call__(self, text: str) -> Optional[str]:
        """The result, or None for no result (including input :meth:`check_input` refuses)."""
        problem = self.check_input(text)
        if problem:
            log.debug("%s: %s", self.name, problem)
            return None
        return clean_result(self.fn(text))

    def run_many(self, texts: Sequence[str]) -> list[Optional[str]]:
        """One result per text, as :meth:`__call__` gives it, through ``batch_fn`` where there is one.

        >>> shout = Tool("Shout", str.upper, "", [], batch_fn=lambda xs: [x.upper() for x in xs])
        >>> shout.run_many(["hi", "", "yo"])
        ['HI', None, 'YO']
        """
        if self.batch_fn is None:
            return [self(t) for t in texts]
        fine = list(dict.fromkeys(t for t in texts if not self.check_input(t)))
        raw = list(self.batch_fn(fine)) if fine else []
        if len(raw) != len(fine):
            raise ValueError(f"{self.name}'s batch_fn gave {len(raw)} results for {len(fine)} inputs; "
                             "it must give one result (or None) per input, in order")
        got = {t: clean_result(r) for t, r in zip(fine, raw)}
        return [got.get(t) for t in texts]

    def check_input(self, text: object) -> Optional[str]:
        return input_problem(text, self.name, self.takes_input, self.max_input_chars, self.example_input)

    def prompt_prefix(self) -> str:
        if not self.demonstrations:
            raise ValueError(f"tool {self.name} has no demonstrations; add 3-8 (input, output) "
                             "pairs showing where its calls go")
        blocks = [self.instruction.strip()]
        blocks += [f"Input: {x}\nOutput: {y}" for x, y in self.demonstrations]
        return "\n\n".join(blocks) + "\n\nInput:"

    @staticmethod
    def prompt_context(text: str) -> str:
        return f" {text}\nOutput:"


TOOLS: Registry[Tool] = Registry("tool")
