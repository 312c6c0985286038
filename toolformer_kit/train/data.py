"""Turn a C* file into token sequences for plain next-token training.

C* is JSONL, one ``{"text": ...}`` object per line, with the kept calls already written into the
text as `` [Tool(input) -> result]``. Calls and results are ordinary text here: every token is
trained on, so the model learns where to open a call, what to ask and how to use the result.

Texts longer than ``max_length`` tokens (after an end-of-text token is appended) are **split**
into consecutive pieces of ``max_length`` tokens by default, so no call is lost; a piece may then
start inside a call. With ``overflow="truncate"`` only the first piece is kept. Pieces shorter
than two tokens are dropped: they have nothing left to predict.

>>> chunk_ids(list(range(7)), 3)
[[0, 1, 2], [3, 4, 5]]
>>> chunk_ids(list(range(7)), 3, "truncate")
[[0, 1, 2]]
"""

from __future__ import annotations

import json
import logging
import random
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Sequence

import torch

from ..calls import find_calls, strip_calls
from ..config import ConfigError

log = logging.getLogger(__name__)

IGNORE = -100  # label value the loss skips (padding)


class DataError(ConfigError):
    """A data file that cannot be used; the message names the file, the line and the fix."""


# ---------------------------------------------------------------- reading
def parse_jsonl(lines: Iterable[str], source: str = "data") -> list[str]:
    """The ``text`` of each JSON line; blank lines are skipped, anything else is an error.

    >>> parse_jsonl(['{"text": "a [Calculator(1 + 1) -> 2] 2"}', '', '{"text": "b", "id": 3}'])
    ['a [Calculator(1 + 1) -> 2] 2', 'b']
    >>> parse_jsonl(['{"txt": "a"}'], "c.jsonl")
    Traceback (most recent call last):
    ...
    toolformer_kit.train.data.DataError: c.jsonl line 1: expected a JSON object with a string "text" field; each line of a C* file must look like {"text": "..."}
    """
    texts = []
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError as exc:
            raise DataError(f"{source} line {number} is not JSON ({exc.msg}); each line of a C* file "
                            'must look like {"text": "..."}') from None
        if not isinstance(record, dict) or not isinstance(record.get("text"), str):
            raise DataError(f'{source} line {number}: expected a JSON object with a string "text" field; '
                            'each line of a C* file must look like {"text": "..."}')
        texts.append(record["text"])
    return texts


def texts_from_json(obj: Any, source: str = "data") -> list[str]:
    """Texts from a JSON document: a list or dict of strings or of objects with ``text``/``extract``.

    The second form covers Wikipedia summary dumps (``{title: {"extract": ...}}``), handy as
    plain dev texts.

    >>> texts_from_json({"A": {"extract": "x"}, "B": {"text": "y"}, "C": "z"})
    ['x', 'y', 'z']
    """
    items = obj.values() if isinstance(obj, dict) else obj if isinstance(obj, list) else None
    if items is None:
        raise DataError(f"{source}: expected a JSON list or mapping of texts")
    texts = []
    for item in items:
        text = item if isinstance(item, str) else (
            item.get("text", item.get("extract")) if isinstance(item, dict) else None)
        if not isinstance(text, str):
            raise DataError(f'{source}: every entry must be a string or an object with a "text" field')
        texts.append(text)
    return texts


def read_texts(path: str | Path) -> list[str]:
    """All texts of a ``.jsonl`` file (or a ``.json`` list/mapping); empty files are an error."""
    path = Path(path)
    if not path.is_file():
        raise DataError(f"data file {path} does not exist; give the C* JSONL written by 'toolformer annotate'")
    try:
        with open(path, encoding="utf-8") as fh:
            if path.suffix == ".json":
                texts = texts_from_json(json.load(fh), str(path))
            else:
                texts = parse_jsonl(fh, str(path))
    except UnicodeDecodeError:
        raise DataError(f"{path} is not UTF-8 text; give a JSONL file of {{\"text\": ...}} objects") from None
    except json.JSONDecodeError as exc:
        raise DataError(f"{path} is not valid JSON ({exc.msg} at line {exc.lineno})") from None
    texts = [t for t in texts if t.strip()]
    if not texts:
        raise DataError(f"{path} holds no texts; each line must be a JSON object with a non-empty \"text\"")
    return texts


# ---------------------------------------------------------------- corpus-level helpers
def tool_counts(texts: Iterable[str]) -> Counter:
    """How many calls of each tool the texts hold (for the warning and the model card).

    >>> tool_counts(["a [Calculator(1 + 1) -> 2] 2 [QA(who?) -> me]", "plain"])
    Counter({'Calculator': 1, 'QA': 1})
    """
    return Counter(p.call.tool for text in texts for p in find_calls(text))


CARVED_DEV = "carved out of --data (calls removed), not held-out documents as in the paper"


def carved_dev(calls_kept: bool) -> str:
    """The summary's "dev source" for carved dev texts, saying whether they keep their calls.

    >>> carved_dev(True)
    'carved out of --data (calls kept: --dev-with-calls), not held-out documents as in the paper'
    """
    return CARVED_DEV.replace("calls removed", "calls kept: --dev-with-calls") if calls_kept else CARVED_DEV


def split_dev(texts: Sequence[str], dev_docs: int, fraction: float, seed: int) -> tuple[list[str], list[str]]:
    """Hold out up to ``min(dev_docs, fraction * n)`` texts, chosen by seed, the same for every run.

    The +CC and tool runs on one C* file thus share their dev texts, which makes their
    perplexities comparable. These are not the paper's dev set (held-out documents never
    annotated): the run's summary and card say so (:data:`CARVED_DEV`).

    >>> train, dev = split_dev([f"t{i}" for i in range(10)], 1000, 0.2, seed=0)
    >>> len(train), len(dev), sorted(train + dev) == sorted(f"t{i}" for i in range(10))
    (8, 2, True)
    """
    n_dev = min(dev_docs, int(len(texts) * fraction))
    order = list(range(len(texts)))
    random.Random(seed).shuffle(order)
    dev_idx = set(order[:n_dev])
    return ([t for i, t in enumerate(texts) if i not in dev_idx], [texts[i] for i in sorted(dev_idx)])


def sample_texts(texts: Sequence[str], n: int, seed: int) -> list[str]:
    """``n`` texts chosen by seed (all of them, in order, if there are no more than ``n``)."""
    if len(texts) <= n:
        return list(texts)
    return [texts[i] for i in sorted(random.Random(seed).sample(range(len(texts)), n))]


def training_texts(texts: Sequence[str], plain_baseline: bool) -> list[str]:
    """The texts as the model will see them: with calls, or with calls removed for "+CC"."""
    return [strip_calls(t) for t in texts] if plain_baseline else list(texts)


# ---------------------------------------------------------------- tokens
def chunk_ids(ids: Sequence[int], max_length: int, overflow: str = "split") -> list[list[int]]:
    """Cut one document's ids into pieces of at most ``max_length`` (see the module docstring)."""
    pieces = [list(ids[i:i + max_length]) for i in range(0, len(ids), max_length)]
    if overflow == "truncate":
        pieces = pieces[:1]
    return [p for p in pieces if len(p) >= 2]


def tokenize(tokenizer, texts: Sequence[str], max_length: int, overflow: str = "split") -> list[list[int]]:
    """Ids of each text (with the tokenizer's own BOS, if any, and an EOS after it), then chunked."""
    eos = [tokenizer.eos_token_id] if tokenizer.eos_token_id is not None else []
    sequences = []
    for text in texts:
        ids = list(tokenizer(text, add_special_tokens=True)["input_ids"]) + eos
        sequences.extend(chunk_ids(ids, max_length, overflow))
    return sequences


class TokenDataset(torch.utils.data.Dataset):
    """A list of token sequences in the shape the Trainer's data loader expects."""

    def __init__(self, sequences: Sequence[Sequence[int]]):
        self.sequences = [list(s) for s in sequences]

    def __len__(self) -> int:
        return len(self.sequences)

    def __getitem__(self, i: int) -> dict:
        return {"input_ids": self.sequences[i]}

    @property
    def n_tokens(self) -> int:
        return sum(len(s) for s in self.sequences)


def pad_batch(sequences: Sequence[Sequence[int]], pad_id: int) -> dict[str, torch.Tensor]:
    """Right-pad to the longest row; labels copy the ids and skip the padding.

    Padding is masked by position, not by id, because many tokenizers pad with their EOS id,
    which is also a real token at each document's end.

    >>> b = pad_batch([[5, 6, 7], [8, 9]], pad_id=0)
    >>> b["input_ids"].tolist(), b["labels"].tolist(), b["attention_mask"].tolist()
    ([[5, 6, 7], [8, 9, 0]], [[5, 6, 7], [8, 9, -100]], [[1, 1, 1], [1, 1, 0]])
    """
    width = max(len(s) for s in sequences)
    ids = torch.full((len(sequences), width), pad_id, dtype=torch.long)
    labels = torch.full((len(sequences), width), IGNORE, dtype=torch.long)
    mask = torch.zeros((len(sequences), width), dtype=torch.long)
    for row, seq in enumerate(sequences):
        ids[row, :len(seq)] = torch.tensor(seq, dtype=torch.long)
        labels[row, :len(seq)] = ids[row, :len(seq)]
        mask[row, :len(seq)] = 1
    return {"input_ids": ids, "attention_mask": mask, "labels": labels}


@dataclass
class Collator:
    """The Trainer's ``data_collator``: plain causal-LM batches, no prompt/completion masking."""

    pad_id: int

    def __call__(self, features: Sequence[dict]) -> dict[str, torch.Tensor]:
        return pad_batch([f["input_ids"] for f in features], self.pad_id)


# ---------------------------------------------------------------- call tokens
def call_token_mask(text: str, offsets: Sequence[tuple[int, int]]) -> list[bool]:
    """Which tokens (given by character ``(start, end)`` offsets) overlap a call in ``text``.

    Used to measure the loss on the call tokens alone: the part of C* a base model has never
    seen, and so the part whose loss should fall first.

    >>> text = "So 2 [Calculator(1 + 1) -> 2] 2."
    >>> call_token_mask(text, [(0, 2), (2, 4), (4, 17), (17, 29), (29, 31), (31, 32)])
    [False, False, True, True, False, False]
    """
    spans = [(p.start, p.end) for p in find_calls(text)]
    return [any(s < e_tok and s_tok < e for s, e in spans) for s_tok, e_tok in offsets]
