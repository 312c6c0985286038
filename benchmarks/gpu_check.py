"""The GPU check: every stage of the HF backend on CUDA in bf16, with random weights, in one command.

Why random weights. A device machine here has PyTorch, transformers, PEFT and accelerate but no
network, and receives at most 64 MiB of the repository, so the embedded weights (0.5-2.5 GB)
cannot reach it. Throughput does not depend on the weights' values, only on the architecture,
so each embedded model is built from its committed ``config.json`` (``benchmarks/gpu_check/``)
with weights drawn from one seed, and a byte-level stand-in tokenizer (the real ones are 3-33 MB)
whose ids are a subset of the model's vocabulary (the output head keeps its full size).

What it does per model: build the weights on the CPU from the seed, then

1. **agreement** on a tiny slice: token log-probabilities of 2 texts on the CPU in fp32 against the
   device in fp32 (must agree to 2e-3) and in bf16 (reported; the CPU's bf16 differed from fp32
   by up to 0.17 nats on real weights);
2. **throughput** on the device in bf16 of positions (p(" [") after the Calculator prompt),
   sampling (k × m rows of 16 new tokens), scoring (the filter's batched log-probabilities), a
   training step (AdamW, forward + backward) and tool-aware decoding (greedy, Calculator on),
   printed beside the CPU's committed figures (``results/throughput``).

    python benchmarks/gpu_check.py                      # on the device: all three models
    python benchmarks/gpu_check.py --device cpu --models smollm2-135m --layers 2   # CPU rehearsal

``--device cpu`` runs everything up to the device switch (the tests do, with 2 layers).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from toolformer_kit.annotate.scoring import BatchedScorer, Request  # noqa: E402
from toolformer_kit.decode.config import DecodeConfig  # noqa: E402
from toolformer_kit.decode.hf import ToolAwareDecoder  # noqa: E402
from toolformer_kit.lm.base import SamplingConfig  # noqa: E402
from toolformer_kit.lm.hf import HFLanguageModel  # noqa: E402
from toolformer_kit.tools import get_tool  # noqa: E402

CONFIGS = Path(__file__).resolve().parent / "gpu_check"
MODELS = ("smollm2-135m", "qwen2.5-coder-0.5b", "gemma3-270m")
TEXTS = ["The school has 23 classes of 28 pupils, so it has 644 pupils in all and 31 teachers.",
         "I had 250 euros and spent 85 on books and 40 on food, which left me with 125 euros.",
         "A box holds 12 eggs, so 7 boxes hold 84 eggs; we sold 5 boxes and kept the other 24 eggs.",
         "The train carried 412 people and 37 got off at the first stop, leaving 375 on board."]
EOS = "<|endoftext|>"


def stand_in_tokenizer():
    """Byte-level BPE over the 256 bytes, " [" merged into one token (as the real tokenizers have
    it), one end-of-text token: ids 0-258, valid in every model's vocabulary."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    alphabet = pre_tokenizers.ByteLevel.alphabet()
    vocab = {ch: i for i, ch in enumerate(sorted(alphabet))}
    vocab["Ġ["] = len(vocab)
    tok = Tokenizer(models.BPE(vocab=vocab, merges=[("Ġ", "[")]))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)
    tok.decoder = decoders.ByteLevel()
    tok.add_special_tokens([EOS])
    return PreTrainedTokenizerFast(tokenizer_object=tok, eos_token=EOS, pad_token=EOS)


def build(name: str, layers: int | None, seed: int):
    """The model from its committed config, weights drawn from ``seed`` on the CPU in fp32."""
    from transformers import AutoConfig, AutoModelForCausalLM

    config = AutoConfig.for_model(**json.loads((CONFIGS / f"{name}.json").read_text()))
    text = config.get_text_config() if hasattr(config, "get_text_config") else config
    if layers:
        text.num_hidden_layers = layers
        if getattr(text, "layer_types", None):
            text.layer_types = text.layer_types[:layers]
    tok = stand_in_tokenizer()
    eos = tok.convert_tokens_to_ids(EOS)
    for obj in (config, text):
        obj.eos_token_id, obj.bos_token_id, obj.pad_token_id = eos, None, eos
    torch.manual_seed(seed)
    model = AutoModelForCausalLM.from_config(config, dtype=torch.float32)
    model.generation_config.eos_token_id, model.generation_config.bos_token_id = eos, None
    return model, tok


def wrap(model, tok, device: str, dtype) -> HFLanguageModel:
    import copy

    return HFLanguageModel(copy.deepcopy(model).to(device=device, dtype=dtype), tok, name="random")


def agreement(model, tok, device: str) -> dict:
    """Max |Δ log p| over 2 texts: device fp32 and bf16 against the CPU in fp32."""
    ref = wrap(model, tok, "cpu", torch.float32)
    prefixes, conts = ["Q: "] * 2, TEXTS[:2]
    want = ref.token_logprobs(prefixes, conts)
    out = {}
    for label, dtype in (("fp32", torch.float32), ("bf16", torch.bfloat16)):
        lm = wrap(model, tok, device, dtype)
        got = lm.token_logprobs(prefixes, conts)
        out[label] = float(max(abs(a - b).max() for a, b in zip(want, got)))
        del lm
    out["fp32_ok"] = out["fp32"] < 2e-3
    return out


def timed(fn, sync) -> tuple[float, object]:
    sync()
    start = time.perf_counter()
    result = fn()
    sync()
    return time.perf_counter() - start, result


def throughput(lm: HFLanguageModel, k: int, m: int, sync) -> dict:
    """Tokens per second of each stage on the device (a warm-up run first for each)."""
    calc = get_tool("Calculator")
    prompt = calc.prompt_context("") if hasattr(calc, "prompt_context") else "Calculator:"
    texts = TEXTS * 2
    out = {}

    def positions():
        return lm.call_start_logprobs(prompt, texts)

    positions()
    secs, pos = timed(positions, sync)
    tokens = sum(len(p.token_ids) for p in pos)
    out["positions"] = {"seconds": round(secs, 3), "tokens_per_s": round(tokens / secs, 1)}

    prefixes = [t[: 20 + 7 * j] + " [" for t in texts for j in range(k)]
    cfg = SamplingConfig(max_new_tokens=16, seed=0)
    lm.sample(prefixes[:2], 2, config=cfg, shared_prefix=prompt)
    secs, samples = timed(lambda: lm.sample(prefixes, m, config=cfg, shared_prefix=prompt), sync)
    new = sum(len(s.token_ids) for row in samples for s in row)
    out["sampling"] = {"seconds": round(secs, 3), "new_tokens_per_s": round(new / secs, 1), "rows": len(prefixes) * m}

    scorer = BatchedScorer(lm)
    docs = [lm.encode(" " + t) for t in texts]
    calls = [lm.encode(f"[Calculator({a} * {b}) -> {a * b}] ") for a in range(3, 3 + k) for b in (7, 11)]
    reqs = [Request(d, tuple(c), tuple(range(2, len(docs[d]) - 5, 9))) for d in range(len(docs)) for c in calls]
    scorer.losses(docs, reqs[:4])
    before = scorer.stats.body_tokens
    secs, _ = timed(lambda: scorer.losses(docs, reqs), sync)
    out["scoring"] = {"seconds": round(secs, 3), "tokens_per_s": round((scorer.stats.body_tokens - before) / secs, 1)}

    out["train_step"] = train_step(lm, texts, sync)

    decoder = ToolAwareDecoder(lm, tools={"Calculator": calc}, batch_size=64)
    dcfg = DecodeConfig(max_new_tokens=24, k=10, max_calls=1)
    prompts = [t[:40] for t in texts] * 8
    decoder.generate(prompts[:2], dcfg)
    secs, res = timed(lambda: decoder.generate(prompts, dcfg), sync)
    out["decoding"] = {"seconds": round(secs, 3), "answers_per_s": round(len(prompts) / secs, 2),
                       "new_tokens_per_s": round(sum(len(r.token_ids) for r in res) / secs, 1)}
    return out


def train_step(lm: HFLanguageModel, texts: list[str], sync) -> dict:
    """Forward + backward + AdamW on a batch of 8 padded texts, in the model's dtype (the
    weights are restored after: the other stages use them too)."""
    model = lm.model
    saved = {n: p.detach().clone() for n, p in model.named_parameters()}
    ids = [lm.encode(t) for t in texts]
    width = max(map(len, ids))
    batch = torch.full((len(ids), width), lm.pad_id, dtype=torch.long)
    mask = torch.zeros_like(batch)
    for r, s in enumerate(ids):
        batch[r, : len(s)], mask[r, : len(s)] = torch.tensor(s), 1
    batch, mask = batch.to(lm.device), mask.to(lm.device)
    labels = batch.masked_fill(mask == 0, -100)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-5)
    model.train()

    def step():
        loss = model(input_ids=batch, attention_mask=mask, labels=labels).loss
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        return loss.item()

    step()
    secs, loss = timed(step, sync)
    model.eval()
    with torch.no_grad():
        for n, p in model.named_parameters():
            p.copy_(saved[n])
    return {"seconds": round(secs, 3), "tokens_per_s": round(int(mask.sum()) / secs, 1), "loss": round(loss, 3)}


def cpu_figures() -> dict:
    """The CPU's committed rates (real weights, bf16 where the CPU has it), for the side-by-side."""
    out = {}
    path = ROOT / "results/throughput/before_after_calculator.json"
    if path.is_file():
        after = json.loads(path.read_text())["before_after"]["after"]["stages"]
        out.update({f"{k} ({'SmolLM2' if k == 'scoring' else 'Qwen'})": v.get("tokens_per_s")
                    for k, v in after.items() if k in ("positions", "sampling", "scoring")})
    path = ROOT / "results/throughput/eval_before_after.json"
    if path.is_file():
        d = json.loads(path.read_text())
        out["decoding answers/s (Qwen)"] = round(d["total"]["n"] / d["total"]["after"], 2)
    return out


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--models", default=",".join(MODELS))
    ap.add_argument("--layers", type=int, default=None, help="keep only this many layers (a quick rehearsal)")
    ap.add_argument("--k", type=int, default=20, help="positions per text for sampling and scoring")
    ap.add_argument("--m", type=int, default=10, help="samples per position")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--json", default=None, help="also write the figures here")
    args = ap.parse_args(argv)
    if args.device.startswith("cuda") and not torch.cuda.is_available():
        raise SystemExit("no CUDA device here; run with --device cpu to rehearse up to the device switch")
    sync = torch.cuda.synchronize if args.device.startswith("cuda") else (lambda: None)
    report = {"device": torch.cuda.get_device_name() if args.device.startswith("cuda") else "cpu",
              "torch": torch.__version__, "cpu_committed": cpu_figures(), "models": {}}
    print(f"device {report['device']}, torch {report['torch']}")
    for name in args.models.split(","):
        model, tok = build(name, args.layers, args.seed)
        agree = agreement(model, tok, args.device)
        print(f"{name}: max |Δ log p| vs CPU fp32: fp32 {agree['fp32']:.2e} "
              f"({'ok' if agree['fp32_ok'] else 'TOO LARGE'}), bf16 {agree['bf16']:.3f}", flush=True)
        lm = wrap(model, tok, args.device, torch.bfloat16)
        rates = throughput(lm, args.k, args.m, sync)
        for stage, r in rates.items():
            print(f"  {stage:10s} " + ", ".join(f"{k} {v}" for k, v in r.items()), flush=True)
        report["models"][name] = {"agreement": agree, "bf16": rates}
        del lm, model
        if args.device.startswith("cuda"):
            torch.cuda.empty_cache()
    print("CPU, committed (real weights): " + ", ".join(f"{k} {v}" for k, v in report["cpu_committed"].items()))
    if args.json:
        Path(args.json).write_text(json.dumps(report, indent=2))
    if not all(m["agreement"]["fp32_ok"] for m in report["models"].values()):
        raise SystemExit("fp32 on the device disagrees with the CPU beyond 2e-3")
    return report


if __name__ == "__main__":
    main()
