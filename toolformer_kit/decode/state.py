"""One row's call state during tool-aware decoding, kept free of torch so it can be reasoned about.

A row moves through four phases::

    text ──(" [" forced or sampled, a call left)──▶ call ──("->" written)──▶ [tool runs] ──▶ close ──▶ text

In ``text`` the model writes freely. In ``call`` it writes ``Tool(input`` … until it writes
``->``; the decoder then runs the tool and queues `` result]`` as forced tokens (phase ``close``);
once they are fed, the row is back in ``text`` with one call fewer left.

**Only allowed tools can be named.** Until the call's ``(`` is written, every token that would
not keep the call text a prefix of ``Name(`` for an allowed tool gets probability 0
(:func:`name_tokens`). Why: a task that disables a tool (WikiSearch on LAMA) must not lose the
input's one call to an empty result the model never saw in training; the model's mass moves to
the tools it may use, as if the disabled one did not exist. Where no tool is allowed, " [" is
never opened at all. (``unknown_tool`` and ``unparsable`` below are then only guards.)

**The arrow can be forced** (``force_arrow``, off by default: the paper waits for the model to
write "->"). Once a call's input is closed by its ``)``, the decoder queues `` ->`` as forced
tokens, and a token that would close the input and go on writing in the same token (``)]``, ``) =``)
gets probability 0 (:func:`closing_tokens`). Why: a small model fine-tuned on few calls opens them
and writes a sensible input, then copies the corpus's ``= 528]`` where the call wants ``-> 528]``,
so the tool never runs; the option constrains only the call's syntax, never its content.

**Inputs can be typed** (``constrain_inputs``, off by default; not the paper's). While the model
writes the input of a call to a tool that declares an input grammar
(:attr:`~toolformer_kit.tools.base.Tool.input_grammar`: the Calculator's numbers and operators,
the Calendar's empty input), the tokens that would put a character outside it get probability 0
(:func:`grammar_tokens`). Why: a model that writes ``Calculator(twenty / 4)`` gets no result; the
option shows what the same model does when it cannot, and is reported beside the unconstrained
decoding, never instead of it.

**The answer budget** (``max_answer_tokens``) counts the tokens the model writes outside calls
(:attr:`RowState.answer_tokens`), so a long result (WikiSearch's ~50-100 tokens) never eats the
answer's room; ``max_new_tokens`` stays the hard cap on everything.

Malformed calls never stop decoding. Each one is recorded with a reason, counted, and handled so
that the text stays readable and the row keeps going:

=====================  ================================================  ============================
reason                 when                                              what is written
=====================  ================================================  ============================
unknown_tool           "->" after a tool not given (or not allowed)      `` ]`` (the empty result)
unparsable             "->" written but no ``Tool(input)`` before it     `` ]``
no_result              the tool gave no result (None, empty)             `` ]``
tool_error             the tool raised or timed out                      `` ]``
too_long               no "->" within ``max_call_tokens`` tokens         ``]`` closes the call
closed_without_arrow   the model closed the call with "]" itself         nothing (kept as written)
line_break             a newline inside the call (calls are one line)    nothing; the call is dead
unfinished             tokens or the model (EOS) ran out inside a call   nothing
repeated               "->" after a call this row already ran (same      `` ]``; no further call opens
                       tool, same input)
=====================  ================================================  ============================

Every started call counts towards ``max_calls``, malformed or not: the paper's limit is on
attempts, and a model that keeps opening broken calls should not loop.

**Several calls per input** (``max_calls`` > 1, beyond the paper's one; its §7 names the limit):
each call pauses at "->", runs, and the row goes on with the result in its text, so a later call's
input can use an earlier result (``[Calculator(25 - 5) -> 20]`` then ``[Calculator(20 / 4) -> 5]``).
A call may open right after another's "]". Tried and dropped (results/chaining-no-adjacent): a
rule that waits for text after a call, as annotation never puts a call right after one. The
fine-tuned Qwen, which writes its first call again right after it, then wrote one token of the
answer first ("10 1 [Calculator(4 + 6) -> ]"), so the repeat cut the answer: SVAMP fell from
41.9 to 29.1 % with two calls allowed. Adjacent, the repeat is closed empty and the answer after
it is the model's own.
**The loop guard**: a call identical to one the row already ran (same tool, same input once
whitespace is normalised) is not run again. It gets the empty close `` ]`` (reason ``repeated``)
and the row opens no further call. Why abandon rather than mask: the repeat is known only once
"->" is written, and a model that repeats a call from the same text is looping; another call
would most likely repeat it again, while the earlier result is already in its text.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field
from typing import Callable, Optional, Sequence

from ..calls import ARROW, CALL_CLOSE, ToolCall, normalize_input, parse_sampled
from .config import CallRecord


def opens_call(call_open_rank: int, k: int) -> bool:
    """Whether " [" is among the top ``k`` next tokens, given how many tokens score strictly higher.

    Counting strictly-higher tokens makes ties go the call's way, and k = 0 never opens a call.

    >>> [opens_call(r, 10) for r in (0, 9, 10)]
    [True, True, False]
    >>> opens_call(0, 0)
    False
    """
    return call_open_rank < k


def name_tokens(prefix: str, names: Sequence[str], pieces: Sequence[str]) -> list[int]:
    """The tokens (indices into ``pieces``, each token's text) that keep a call naming one of
    ``names``: the call text stays a prefix of ``Name(``, or already starts with it.

    >>> name_tokens("Ca", ["Calculator", "Calendar"], ["l", "lc", "le", "x", "", "lculator(2", " l"])
    [0, 1, 2, 5]
    >>> name_tokens("", ["QA"], ["Q", "QA(", "Wiki", "["])
    [0, 1]
    """
    heads = [f"{n}(" for n in names]
    return [t for t, piece in enumerate(pieces)
            if piece and any(h.startswith(prefix + piece) or (prefix + piece).startswith(h) for h in heads)]


def result_text(call_so_far: str, result: Optional[str]) -> str:
    """The forced text that ends a call after "->": ``" result]"``, or ``" ]"`` for no result.

    >>> result_text("Calculator(2 + 3) ->", "5"), result_text("Calculator(2 + 3) -> ", "5")
    (' 5]', '5]')
    >>> result_text("Nope(1) ->", None)
    ' ]'
    """
    space = "" if call_so_far.endswith(" ") else " "
    return f"{space}{result or ''}{CALL_CLOSE}"


def paren_depth(text: str) -> int:
    """Open parentheses minus closed ones.

    >>> paren_depth("Calculator((2 + 3) * 4"), paren_depth("(1))")
    (1, -1)
    """
    return text.count("(") - text.count(")")


def input_paren_depth(body: str) -> Optional[int]:
    """Paren depth of a call's text from its input's ``(`` on; None before the ``(``.

    >>> input_paren_depth("Calculator((2 + 3"), input_paren_depth("Calculator(2)"), input_paren_depth("Calc")
    (2, 0, None)
    """
    start = body.find("(")
    return None if start < 0 else paren_depth(body[start:])


def input_closed(body: str) -> bool:
    """Whether a call's text ends with the ``)`` that closes its input.

    >>> [input_closed(t) for t in ("Calculator(2 + 3)", "Calculator((2 + 3)", "Calculator((2) * 4)", "Calc")]
    [True, False, True, False]
    """
    return body.endswith(")") and input_paren_depth(body) == 0


def closing_tokens(depth: int, pieces: Sequence[str]) -> list[int]:
    """The tokens (indices into ``pieces``) that, written at paren ``depth`` inside a call's input,
    would close it and keep writing in the same token; with ``force_arrow`` they get probability 0,
    so the input always ends on a token boundary where `` ->`` can be forced.

    >>> closing_tokens(1, [")", ")]", "2", "))", " )", ") =", "(3)"])
    [1, 3, 5]
    >>> closing_tokens(2, ["))", ")))", ")"])
    [1]
    """
    out = []
    for t, piece in enumerate(pieces):
        d = depth
        for i, ch in enumerate(piece):
            d += (ch == "(") - (ch == ")")
            if d <= 0:
                if i < len(piece) - 1:
                    out.append(t)
                break
    return out


def call_key(call: ToolCall) -> tuple[str, str]:
    """What makes two calls identical for the loop guard: the tool and its input, whitespace runs
    collapsed (a result plays no part).

    >>> call_key(ToolCall("Calculator", " 2  + 3 ")) == call_key(ToolCall("Calculator", "2 + 3", "5"))
    True
    """
    return call.tool, normalize_input(call.input)


def grammar_tokens(depth: int, grammar: str, pieces: Sequence[str]) -> list[int]:
    """The tokens (indices into ``pieces``) that keep a call's input, open at paren ``depth``, within
    its tool's ``grammar`` (the characters an input may hold, :attr:`~toolformer_kit.tools.base.Tool.input_grammar`):
    every character up to the ``)`` that closes the input is in the grammar; what follows that
    ``)`` in the same token is past the input. An empty token never fits (it would write nothing).

    >>> grammar_tokens(1, "0123456789+ ", ["1", "2 +", "a", ")", ") ->", "x)", "", "(1"])
    [0, 1, 3, 4]
    >>> grammar_tokens(1, "", ["2", ")", ")]", " )"])  # the Calendar: only the closing ")"
    [1, 2]
    >>> grammar_tokens(2, "0123456789()", ["))", ")", "1)"])
    [0, 1, 2]
    """
    allowed = set(grammar)
    out = []
    for t, piece in enumerate(pieces):
        d, fits = depth, bool(piece)
        for ch in piece:
            if ch == ")" and d == 1:
                break  # the input is closed: the rest of the token lies past it
            if ch not in allowed:
                fits = False
                break
            d += (ch == "(") - (ch == ")")
        if fits:
            out.append(t)
    return out


@dataclass
class CallCheck:
    """What the call text written so far means: keep writing (``action == ""``), ``run`` the
    tool, ``close`` it with forced text, or ``end`` it as written."""

    action: str
    call: Optional[ToolCall] = None
    reason: str = ""


def check_call(text: str, n_tokens: int, max_tokens: int, known: Callable[[str], bool]) -> CallCheck:
    """Judge a call's text (what follows " [") after the model wrote another token.

    >>> known = lambda name: name == "Calculator"
    >>> check_call("Calculator(2 + 3) ->", 8, 48, known).action
    'run'
    >>> check_call("Calculator(2 +", 5, 48, known).action
    ''
    >>> check_call("Calculator(a -> b", 5, 48, known).action  # "->" inside an open input
    ''
    >>> [check_call(t, 5, 48, known).reason for t in ("Nope(1) ->", "2 + 3 ->", "Calculator(1)]", "Calc\\n")]
    ['unknown_tool', 'unparsable', 'closed_without_arrow', 'line_break']
    >>> check_call("Calculator(1 + 1 + 1", 48, 48, known).reason
    'too_long'
    """
    parsed = parse_sampled(text)
    if parsed is not None and parsed.call.result is not None and not parsed.closed:
        call = ToolCall(parsed.call.tool, parsed.call.input)
        return CallCheck("run", call) if known(call.tool) else CallCheck("close", call, "unknown_tool")
    if parsed is not None and parsed.closed or CALL_CLOSE in text:
        call = parsed.call if parsed is not None else None
        return CallCheck("end", call, "closed_without_arrow")
    if "\n" in text:
        return CallCheck("end", parsed.call if parsed else None, "line_break")
    if ARROW in text and parsed is None:
        return CallCheck("close", None, "unparsable")
    if n_tokens >= max_tokens:
        return CallCheck("close", parsed.call if parsed else None, "too_long")
    return CallCheck("")


@dataclass(frozen=True)
class RowRules:
    """What every row of one ``generate`` call shares: the tokenizer's view of calls and the config."""

    encode: Callable[[str], list[int]]
    decode: Callable[[Sequence[int]], str]
    call_open_ids: tuple[int, ...]
    eos_ids: frozenset
    stop: tuple[str, ...]
    max_call_tokens: int
    known: Callable[[str], bool]
    names: tuple[str, ...] = ()  # the tools a call may name (the name mask's choices)
    force_arrow: bool = False  # queue " ->" once the input's ")" is written
    drop_empty: bool = False  # take a call that found nothing out of the text (DecodeConfig.drop_empty_calls)


@dataclass
class RowState:
    """Everything one prompt carries through decoding. ``ids``/``forced`` are the new tokens."""

    prompt_ids: list[int]
    rules: RowRules
    calls_left: int
    ids: list[int] = field(default_factory=list)
    forced: list[bool] = field(default_factory=list)
    queue: deque = field(default_factory=deque)  # forced tokens still to feed (a result, a "]")
    calls: list[CallRecord] = field(default_factory=list)
    phase: str = "text"
    call_start: int = 0  # index in ids of the first token after the call-open tokens
    scan_from: int = 0  # stop strings are searched from this character of the text
    cut: Optional[int] = None  # text ends here (a stop string was found)
    done: bool = False
    eos: bool = False
    answer_tokens: int = 0  # tokens the model wrote outside calls (the answer budget counts these)
    ran: set = field(default_factory=set)  # (tool, input) of every call run so far: the loop guard
    no_open_at: Optional[int] = None  # len(ids) where a dropped call's " [" completed: none opens there again

    # ------------------------------------------------------------------ queries
    def text(self) -> str:
        return self.rules.decode(self.ids[:-1] if self.eos else self.ids)

    def final_text(self) -> str:
        text = self.text()
        return text if self.cut is None else text[: self.cut]

    def at_open_point(self) -> bool:
        """Whether the next token could complete " [": always for a one-token " [", else only
        right after the model wrote the tokens before its last (e.g. " " for " " + "[")."""
        head = self.rules.call_open_ids[:-1]
        return self.phase == "text" and (not head or tuple(self.ids[-len(head):]) == head)

    def can_open(self) -> bool:
        return self.calls_left > 0 and self.at_open_point() and len(self.ids) != self.no_open_at

    def call_body(self) -> str:
        return self.rules.decode(self.ids[self.call_start:])

    def input_depth(self) -> Optional[int]:
        """Paren depth (≥ 1) while the model writes a call's input, else None."""
        if self.phase != "call" or self.queue:
            return None
        depth = input_paren_depth(self.call_body())
        return depth if depth is not None and depth > 0 else None

    def input_tool(self) -> Optional[tuple[str, int]]:
        """(tool name, paren depth) while the model writes a call's input, else None."""
        depth = self.input_depth()
        return None if depth is None else (self.call_body().split("(", 1)[0].strip(), depth)

    def naming(self) -> Optional[str]:
        """The call text so far while the tool's name is still being written, else None."""
        if self.phase != "call" or self.queue:
            return None
        body = self.call_body()
        return None if "(" in body else body

    # ------------------------------------------------------------------ transitions
    def open_call(self) -> int:
        """The token that completes " [" (forced; the decoder feeds it now)."""
        return self.rules.call_open_ids[-1]

    def push(self, token: int, forced: bool) -> Optional[ToolCall]:
        """Append a token and advance the phase; returns a call to run when the row reached "->"."""
        self.ids.append(token)
        self.forced.append(forced)
        if not forced and token in self.rules.eos_ids:
            self.eos = True
            self.stop_now()
            return None
        if self.phase == "text":
            n = len(self.rules.call_open_ids)
            if self.calls_left > 0 and tuple(self.ids[-n:]) == self.rules.call_open_ids:
                self._enter_call(n)
            else:
                self.answer_tokens += not forced
                self._check_stop()
        elif self.phase == "close":
            if not self.queue:
                self.phase = "text"
                self.scan_from = len(self.text())
        elif self.phase == "call":
            return self._advance_call()
        return None

    def _enter_call(self, n_open: int) -> None:
        self.phase = "call"
        self.call_start = len(self.ids)
        self.calls_left -= 1
        self.scan_from = len(self.rules.decode(self.ids[:-n_open]))
        self.calls.append(CallRecord("", "", None, len(self.ids) - n_open, False, "unfinished"))

    def _advance_call(self) -> Optional[ToolCall]:
        body = self.call_body()
        verdict = check_call(body, len(self.ids) - self.call_start, self.rules.max_call_tokens, self.rules.known)
        if not verdict.action:
            if self.rules.force_arrow and not self.queue and input_closed(body):
                self.queue.extend(self.rules.encode(" " + ARROW))
            return None
        record = self.calls[-1]
        if verdict.call is not None:
            record.tool, record.input = verdict.call.tool, verdict.call.input
        record.reason = verdict.reason
        if verdict.action == "run" and call_key(verdict.call) in self.ran:
            record.reason = "repeated"
            self.calls_left = 0  # the row is looping: no further call opens
            verdict = CallCheck("close", verdict.call, "repeated")
        if verdict.action == "run":
            self.ran.add(call_key(verdict.call))
            self.phase = "tool"
            return verdict.call
        if verdict.action == "close":
            closing = CALL_CLOSE if verdict.reason == "too_long" else result_text(body, None)
            self.queue.extend(self.rules.encode(closing))
            self.phase = "close"
            return None
        self.phase = "text"  # "end": the call stays as the model wrote it
        if verdict.reason == "closed_without_arrow":
            self.scan_from = len(self.text())
        self._check_stop()  # a line break inside the call may be the stop string
        return None

    def resolve(self, result: Optional[str], reason: str = "") -> None:
        """Queue the tool's result (or the empty close) after "->" and record the outcome."""
        record, result = self.calls[-1], result or None
        record.result = result
        record.reason = reason or ("" if result else "no_result")
        record.ok = not record.reason
        if result is None and self.rules.drop_empty:
            self._drop_call(record)
            return
        self.queue.extend(self.rules.encode(result_text(self.call_body(), result)))
        self.phase = "close"

    def _drop_call(self, record: CallRecord) -> None:
        """Take the call, from its call-open tokens on, out of the row: the model goes on from the
        token before it, as if the call had never been opened (the decoder feeds that token again
        at its own position, so the cache past it is never attended)."""
        head = self.forced[record.token_position: self.call_start - 1]  # " " of a " " + "[" open
        self.answer_tokens -= sum(not f for f in head)  # the open's leading tokens the model wrote itself
        del self.ids[record.token_position:], self.forced[record.token_position:]
        record.dropped = True
        self.no_open_at = record.token_position + len(head)  # where " [" would complete again
        self.phase = "text"
        self.scan_from = len(self.text())

    def stop_now(self) -> None:
        """End the row; a call still being written or waiting for its tool is 'unfinished'."""
        self.done = True
        if self.phase in ("call", "tool"):
            self.calls[-1].reason = "unfinished"
            self.calls[-1].ok = False

    def _check_stop(self) -> None:
        if not self.rules.stop:
            return
        text = self.text()
        hits = [i for i in (text.find(s, self.scan_from) for s in self.rules.stop if s) if i >= 0]
        if hits:
            self.cut = min(hits)
            self.done = True
