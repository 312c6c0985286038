"""LoRA through PEFT: the cheap way to fine-tune on a CPU, merged back into a plain model folder.

A LoRA run trains small low-rank adapters next to the frozen weights. The rest of the toolkit
(``load_lm``, decoding, evaluation) expects an ordinary Hugging Face folder, so the final model
is always merged: W + (alpha / r) B A is written back into each adapted weight and the adapter
disappears. The unmerged adapter is kept beside it for anyone who wants it.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Sequence

from ..lm.embedded import resolve_model

log = logging.getLogger(__name__)

ADAPTER_DIR = "adapter"
ADAPTER_FILES = ("adapter_config.json", "adapter_model.safetensors")
PUBLISH_LIMIT_BYTES = 25e6  # the bound on a model committed in models/ (issue 42)


def default_targets(model) -> list[str]:
    """Names of every linear layer inside the decoder blocks (not the output head).

    PEFT's ``"all-linear"`` does much the same; naming the layers keeps the model card explicit.
    """
    import torch  # lazy: heavy

    names = set()
    head = model.get_output_embeddings()
    for full_name, module in model.named_modules():
        if isinstance(module, torch.nn.Linear) and module is not head:
            names.add(full_name.rsplit(".", 1)[-1])
    return sorted(names)


def wrap(model, r: int, alpha: int, dropout: float, targets: Sequence[str] = ()):
    """The model with LoRA adapters attached; only the adapters require gradients."""
    from peft import LoraConfig, get_peft_model  # lazy: heavy, training only

    targets = list(targets) or default_targets(model)
    config = LoraConfig(r=r, lora_alpha=alpha, lora_dropout=dropout, target_modules=targets,
                        task_type="CAUSAL_LM", bias="none")
    peft_model = get_peft_model(model, config)
    trainable, total = peft_model.get_nb_trainable_parameters()
    log.info("LoRA r=%d on %s: %.2fM of %.1fM parameters train", r, ",".join(targets), trainable / 1e6, total / 1e6)
    return peft_model


def is_peft(model) -> bool:
    return hasattr(model, "peft_config") and hasattr(model, "merge_and_unload")


def merge(model):
    """A plain transformers model with the adapters folded into the weights."""
    return model.merge_and_unload() if is_peft(model) else model


def adapter_dtype(adapter_dir: str | Path):
    """The torch dtype a saved adapter's weights are stored in (fp32 unless bf16 or fp16)."""
    import torch  # lazy: heavy
    from safetensors import safe_open

    with safe_open(str(Path(adapter_dir) / "adapter_model.safetensors"), framework="pt") as f:
        stored = f.get_slice(next(iter(f.keys()))).get_dtype()
    return {"BF16": torch.bfloat16, "F16": torch.float16}.get(stored, torch.float32)


def merge_adapter_folder(adapter_dir: str | Path, out_dir: str | Path, base_model: str | None = None,
                         dtype=None) -> Path:
    """Merge a saved adapter (e.g. a checkpoint of an interrupted LoRA run) into a plain folder.

    The base model is read from the adapter's own config unless ``base_model`` is given; ``dtype``
    (a torch dtype) is the one the base is loaded and merged in, by default the adapter's own: the
    trainer keeps fp32 weights (a bf16 run autocasts), so its adapters merge into the fp32 weights it
    merged in memory; a bf16 adapter (``publish_adapter``'s) merges in bf16. Transformers' default
    would load the base in the dtype its config names and fold an fp32 adapter into bf16 weights.
    """
    from peft import PeftConfig, PeftModel  # lazy: heavy, training only
    from transformers import AutoModelForCausalLM, AutoTokenizer  # lazy: heavy

    adapter_dir, out_dir = Path(adapter_dir), Path(out_dir)
    if not (adapter_dir / "adapter_config.json").is_file():
        raise FileNotFoundError(f"{adapter_dir} holds no adapter_config.json; give the adapter folder of a LoRA run")
    base = resolve_model(base_model or PeftConfig.from_pretrained(adapter_dir).base_model_name_or_path)
    dtype = dtype or adapter_dtype(adapter_dir)
    model = PeftModel.from_pretrained(AutoModelForCausalLM.from_pretrained(base, dtype=dtype), adapter_dir)
    merge(model).save_pretrained(out_dir)
    tok_source = adapter_dir if (adapter_dir / "tokenizer_config.json").is_file() else base
    AutoTokenizer.from_pretrained(tok_source).save_pretrained(out_dir)
    log.info("merged %s into %s", adapter_dir, out_dir)
    return out_dir


def publish_adapter(adapter_dir: str | Path, out_dir: str | Path, base_model: str, dtype: str = "bfloat16") -> Path:
    """A LoRA run's adapter as a folder anyone can load on another machine: its weights in
    ``dtype`` (bf16 halves them: Qwen 0.5B at r 16 on every linear layer is 35 MB in fp32), and its
    base named by ``base_model`` (an embedded name such as ``qwen2.5-coder-0.5b``) instead of the
    path it was trained from, which exists only on that machine. ``load_lm(out_dir)`` then loads the
    base and folds the adapter in. Returns ``out_dir``."""
    import json

    import torch  # lazy: heavy
    from safetensors.torch import load_file, save_file

    adapter_dir, out_dir = Path(adapter_dir), Path(out_dir)
    config, weights = adapter_dir / "adapter_config.json", adapter_dir / "adapter_model.safetensors"
    if not (config.is_file() and weights.is_file()):
        raise FileNotFoundError(f"{adapter_dir} holds no adapter_config.json and adapter_model.safetensors; give the "
                                f"{ADAPTER_DIR}/ folder of a LoRA run (toolformer train --lora)")
    resolve_model(base_model)  # a base that does not resolve here fails now, not on the user's machine
    out_dir.mkdir(parents=True, exist_ok=True)
    tensors = {k: v.to(getattr(torch, dtype)).contiguous() for k, v in load_file(str(weights)).items()}
    save_file(tensors, str(out_dir / weights.name), metadata={"format": "pt"})
    settings = json.loads(config.read_text(encoding="utf-8")) | {"base_model_name_or_path": base_model}
    (out_dir / config.name).write_text(json.dumps(settings, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    log.info("published %s (%s, base %s) to %s", adapter_dir, dtype, base_model, out_dir)
    if sum((out_dir / name).stat().st_size for name in ADAPTER_FILES) > PUBLISH_LIMIT_BYTES:
        log.warning("%s is %.1f MB, over the %.0f MB a model committed in models/ may take: lower lora_r", out_dir,
                    adapter_mb(out_dir), PUBLISH_LIMIT_BYTES / 1e6)
    return out_dir


def adapter_mb(folder: str | Path) -> float:
    """A published adapter's size in MB (2**20 bytes): its own files only, not a card beside them."""
    return sum((Path(folder) / name).stat().st_size for name in ADAPTER_FILES) / 2**20
