"""The transformers sampler as it was before continuous batching, kept only as the baseline that
``bench_sample.py`` runs side by side with the current one (same seed, same rows).

Groups of ``max_batch // n`` prefixes were left-padded behind a copy of the shared prompt's cache
and decoded until their slowest row stopped; finished rows were retired but none admitted, and
each row drew its token with its own ``torch.multinomial`` call.
"""

from __future__ import annotations

import copy

import torch

from toolformer_kit.lm.base import Sample, SamplingConfig, cut_at_stop


@torch.no_grad()
def legacy_sample(lm, prefixes, n, stop="]", config=None, *, shared_prefix=(), stop_when=None, max_batch=32):
    cfg = config or SamplingConfig()
    shared = lm.bos_ids + lm._ids(shared_prefix) if len(shared_prefix) else []
    heads = [lm._ids(p) if shared else lm.bos_ids + lm._ids(p) for p in prefixes]
    out = [[] for _ in heads]
    per_group = max(1, max_batch // max(n, 1))
    order = sorted(range(len(heads)), key=lambda i: -len(heads[i]))
    for s in range(0, len(order), per_group):
        group = order[s: s + per_group]
        rows = _sample_group(lm, shared, [heads[i] for i in group], n, cfg, stop, stop_when)
        for i, samples in zip(group, rows):
            out[i] = samples
    return out


def _start_group(lm, shared, heads):
    from transformers import DynamicCache

    P, width = len(shared), max(len(h) for h in heads)
    ids = torch.full((len(heads), width), lm.pad_id, dtype=torch.long)
    mask = torch.zeros((len(heads), P + width), dtype=torch.long)
    mask[:, :P] = 1
    for r, h in enumerate(heads):
        ids[r, width - len(h):] = torch.tensor(h)
        mask[r, P + width - len(h):] = 1
    pos = P + (mask[:, P:].cumsum(-1) - 1).clamp(min=0)
    if P:
        past = copy.deepcopy(lm._prompt_cache(shared)[0])
        past.batch_repeat_interleave(len(heads))
    else:
        past = DynamicCache()
    logits = lm.model(input_ids=ids.to(lm.device), attention_mask=mask.to(lm.device),
                      position_ids=pos.to(lm.device), use_cache=True, logits_to_keep=1,
                      **{lm.cache_kw: past}).logits[:, -1].float()
    return past, mask.to(lm.device), (pos[:, -1] + 1).to(lm.device), logits


def _sample_group(lm, shared, heads, n, cfg, stop, stop_when):
    past, mask, next_pos, logits = _start_group(lm, shared, heads)
    past.batch_repeat_interleave(n)
    logits, mask, next_pos = (t.repeat_interleave(n, 0) for t in (logits, mask, next_pos))
    gens = [lm._row_generator(cfg.seed, shared + h, j) for h in heads for j in range(n)]
    rows = list(range(len(gens)))
    generated = [[] for _ in gens]
    done = [None] * len(gens)
    for _ in range(cfg.max_new_tokens):
        tokens = [_draw(logits[b], gens[r], cfg) for b, r in enumerate(rows)]
        keep = []
        for b, (r, t) in enumerate(zip(rows, tokens)):
            generated[r].append(t)
            text, closed = cut_at_stop(lm.decode(generated[r]), stop)
            closed = closed or bool(stop_when and stop_when(text))
            if closed or t in lm.eos_ids:
                done[r] = Sample(text, closed, list(generated[r]))
            else:
                keep.append(b)
        if not keep:
            break
        if len(keep) < len(rows):
            sel = torch.tensor(keep, device=lm.device)
            past.batch_select_indices(sel)
            mask, next_pos = mask[sel], next_pos[sel]
            tokens = [tokens[b] for b in keep]
            rows = [rows[b] for b in keep]
        mask = torch.cat([mask, mask.new_ones((len(rows), 1))], dim=1)
        step = lm.model(input_ids=torch.tensor(tokens, device=lm.device)[:, None], attention_mask=mask,
                        position_ids=next_pos[:, None], use_cache=True, **{lm.cache_kw: past})
        logits = step.logits[:, -1].float()
        next_pos = next_pos + 1
    for r in range(len(gens)):
        if done[r] is None:
            done[r] = Sample(lm.decode(generated[r]), False, list(generated[r]))
    return [done[h * n:(h + 1) * n] for h in range(len(heads))]


def _draw(logits, gen, cfg):
    if cfg.temperature <= 0:
        return int(torch.argmax(logits))
    logits = logits.detach().cpu() / cfg.temperature
    if cfg.top_k and cfg.top_k < logits.shape[-1]:
        kth = torch.topk(logits, cfg.top_k).values[-1]
        logits = logits.masked_fill(logits < kth, float("-inf"))
    probs = torch.softmax(logits, dim=-1)
    if cfg.top_p < 1.0:
        sorted_p, idx = torch.sort(probs, descending=True)
        drop = sorted_p.cumsum(-1) - sorted_p > cfg.top_p
        probs = probs.scatter(0, idx, sorted_p.masked_fill(drop, 0.0))
    return int(torch.multinomial(probs, 1, generator=gen))
