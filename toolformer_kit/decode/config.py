"""The data of tool-aware decoding: its settings and what it returns (no torch, so the CLI and the
evaluation harness can import them cheaply).

>>> DecodeConfig().k, DecodeConfig().max_calls
(10, 1)
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional

from ..config import ConfigError


@dataclass
class DecodeConfig:
    """How to decode. ``max_new_tokens`` counts every new token, forced ones included."""

    k: int = field(default=10, metadata={"help": "a call starts when ' [' is among the top k next tokens"})
    max_calls: int = field(default=1, metadata={
        "help": "calls per input (1 = the paper); after this many ' [' is masked, and a call identical to one "
                "the input already ran is not run again"})
    disabled: bool = field(default=False, metadata={
        "help": "mask ' [' from the start (the paper's 'Toolformer (disabled)')"})
    max_new_tokens: int = field(default=64, metadata={"help": "new tokens per prompt, forced ones included"})
    temperature: float = field(default=0.0, metadata={"help": "sampling temperature; 0 = greedy"})
    seed: int = field(default=0, metadata={"help": "sampling seed (each prompt gets its own stream)"})
    stop: list[str] = field(default_factory=list, metadata={
        "help": "comma-separated stop strings; output is cut before the first (\\n allowed)"})
    max_call_tokens: int = field(default=48, metadata={
        "help": "a call with no '->' within this many tokens is closed with ']'"})
    allowed_tools: Optional[list[str]] = field(default=None, metadata={
        "help": "comma-separated tools calls may use (default: every tool the decoder has)"})
    force_arrow: bool = field(default=False, metadata={
        "help": "once a call's input is closed by ')', force ' ->' so the tool runs (constrains the call's "
                "syntax only; the paper waits for the model to write '->')"})
    constrain_inputs: bool = field(default=False, metadata={
        "help": "while a call's input is written, mask the tokens that cannot continue the tool's input "
                "grammar (tools that declare one: Calculator, Calendar); not the paper's, an option shown "
                "beside the unconstrained decoding"})
    drop_empty_calls: bool = field(default=False, metadata={
        "help": "remove a call whose tool returned nothing (no result, an error, a timeout) before the model goes "
                "on, as if it had not been opened there, where the paper writes 'Tool(input) ->]'; the call still "
                "counts against max_calls and no call opens again at that point (not the paper's: issue 40)"})
    max_answer_tokens: Optional[int] = field(default=None, metadata={
        "help": "model-written tokens outside calls per prompt; a call and its result do not count "
                "(default: only max_new_tokens limits)"})

    def __post_init__(self):
        if self.k < 0 or self.max_calls < 0 or self.max_new_tokens < 1 or self.max_call_tokens < 1:
            raise ConfigError("decode config: k and max_calls must be >= 0, max_new_tokens and "
                             "max_call_tokens >= 1")
        if self.max_answer_tokens is not None and self.max_answer_tokens < 1:
            raise ConfigError(f"decode config: max_answer_tokens must be >= 1 (or unset), got {self.max_answer_tokens}")
        if self.temperature < 0:
            raise ConfigError(f"decode config: temperature must be >= 0 (0 = greedy), got {self.temperature}")


@dataclass
class DecodeResult:
    """One prompt's output. ``token_ids``/``forced`` cover every new token (EOS and the token
    holding a stop string included), ``text`` is cut before the stop string."""

    prompt: str
    text: str
    calls: list[CallRecord]
    forced: list[bool]
    token_ids: list[int]


@dataclass
class CallRecord:
    """A call the decoder started. ``token_position`` indexes :attr:`DecodeResult.token_ids` at
    the call-open token; ``result`` is what was inserted (None when nothing was)."""

    tool: str
    input: str
    result: Optional[str]
    token_position: int
    ok: bool
    reason: str = ""
    dropped: bool = False  # drop_empty_calls: the call found nothing and was taken out of the text
