"""Token-level dev perplexity and call-token loss.

Why not ``exp(eval_loss)``: the Trainer averages per-batch mean losses, so with documents of
different lengths a short document weighs as much as a long one. Perplexity here is
``exp(total NLL / total tokens)`` over every predicted dev token. The Trainer hands each batch's
logits to :func:`token_nll` (its ``preprocess_logits_for_metrics`` hook), which keeps only one
number per token; :func:`perplexity_metrics` then pools them.
"""

from __future__ import annotations

import math
from typing import Sequence

import numpy as np
import torch

from .data import IGNORE, call_token_mask


def token_nll(logits: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    """-log p(label_t | x_<t) for every position, IGNORE where nothing is predicted.

    Computed row by row in fp32 so that a bf16 model and a 150k-token vocabulary stay cheap.

    >>> logits = torch.zeros(1, 3, 4)  # uniform over 4 tokens
    >>> token_nll(logits, torch.tensor([[1, 2, -100]])).tolist()  # doctest: +ELLIPSIS
    [[1.386..., -100.0]]
    """
    if isinstance(logits, tuple):  # some models return (logits, past); the first is the logits
        logits = logits[0]
    shifted, targets = logits[:, :-1], labels[:, 1:]
    rows = []
    for row_logits, row_targets in zip(shifted, targets):
        nll = torch.nn.functional.cross_entropy(row_logits.float(), row_targets.clamp(min=0), reduction="none")
        rows.append(torch.where(row_targets == IGNORE, torch.full_like(nll, IGNORE), nll))
    return torch.stack(rows)


def perplexity_from_nll(nll: np.ndarray) -> dict[str, float]:
    """Pool per-token NLLs (IGNORE-padded, any shape) into token-level perplexity.

    >>> perplexity_from_nll(np.array([[math.log(2), math.log(8), -100.0]]))["perplexity"]
    4.0
    """
    values = np.asarray(nll, dtype=np.float64)
    values = values[values >= 0]
    if values.size == 0:
        return {"perplexity": float("nan"), "nll": float("nan"), "tokens": 0}
    mean = float(values.mean())
    return {"perplexity": round(math.exp(mean), 6), "nll": mean, "tokens": int(values.size)}


def perplexity_metrics(eval_pred) -> dict[str, float]:
    """The Trainer's ``compute_metrics``: its "predictions" are :func:`token_nll`'s output."""
    predictions = eval_pred.predictions
    if isinstance(predictions, (list, tuple)):
        predictions = np.concatenate([np.ravel(p) for p in predictions])
    return perplexity_from_nll(predictions)


@torch.no_grad()
def call_token_loss(model, tokenizer, texts: Sequence[str]) -> dict[str, float]:
    """Mean NLL of the tokens inside calls and of all other tokens, one text at a time.

    The number that shows a model learning the call syntax: it starts high (a base model has
    never seen ``[Calculator(...) -> ...]``) and falls during training on C*.
    """
    model_was_training = model.training
    model.eval()
    device = next(model.parameters()).device
    sums = {"call": [0.0, 0], "text": [0.0, 0]}
    for text in texts:
        enc = tokenizer(text, add_special_tokens=True, return_offsets_mapping=True)
        ids = torch.tensor([enc["input_ids"]], device=device)
        inside = call_token_mask(text, enc["offset_mapping"])
        nll = token_nll(model(input_ids=ids).logits, ids)[0].tolist()
        for value, in_call in zip(nll, inside[1:]):
            key = "call" if in_call else "text"
            sums[key][0] += value
            sums[key][1] += 1
    model.train(model_was_training)
    return {f"{k}_nll": (s / n if n else float("nan")) for k, (s, n) in sums.items()} | {
        f"{k}_tokens": n for k, (_, n) in sums.items()}
