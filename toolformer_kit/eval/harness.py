"""Run tasks through a tool-aware generator and write what happened, one example at a time.

Layout under ``out``::

    <model>/<setting>/<task>/examples.jsonl   one record per example (prompt, output, calls, correct)
    <model>/<setting>/<task>/run.json         what the records were made with (checked on resume)
    summary.json, table.md                    every run found under ``out``, recomputed each time

A setting (:class:`~.setting.Setting`) is ``disabled`` (the call-open token is masked: the paper's
"(disabled)" rows) or ``kN`` (a call opens when " [" is among the top N next tokens; the paper uses
k = 10 and sweeps 1, 3, 10), optionally ``kN+arrow``.

**Batches.** ``batch_size`` prompts decode together; the decoder refills a finished row's slot
with the next prompt, so each generate call is given :data:`CHUNK` batches' worth of prompts (the
fewer calls, the less time is spent waiting on a call's slowest rows).

**Resuming.** Records are appended as each chunk finishes, so a killed run loses one chunk; a
re-run skips the ids already written. Changing ``--limit`` extends (or reuses) the same sample,
since :func:`~toolformer_kit.eval.tasks.subset` takes examples in a fixed hash order. A run made
with different decoding settings is refused rather than mixed in.

**The generator** is any ``generate(prompts, config, tools) -> results`` with the
:class:`~toolformer_kit.decode.hf.ToolAwareDecoder` result shape, so tests drive the harness with a
fake and :func:`decoder_generate` wires in the real decoder.
"""

from __future__ import annotations

import json
import logging
import time
from dataclasses import asdict, is_dataclass
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping, Sequence

from tqdm.auto import tqdm

from ..calls import strip_calls
from ..config import ConfigError
from ..decode import make_decoder
from ..decode.config import DecodeConfig
from ..files import write_atomic
from ..tools.base import MAX_RESULT_CHARS
from .records import RECORDS, records_for_append
from .report import summarize_run
from .setting import Setting
from .tasks import Example, Task, subset

log = logging.getLogger(__name__)

GenerateFn = Callable[[list[str], Any, Mapping[str, Any]], list[Any]]
RUN_INFO = "run.json"
# The hard cap on a call's tokens when calls are on: the call itself (at most CALL_TOKENS) and its
# result (at most MAX_RESULT_CHARS characters, so about as many tokens at worst). The answer has
# its own budget (max_answer_tokens), which a call or its result never shortens.
CALL_TOKENS = 48
CALL_TOKEN_BUDGET = CALL_TOKENS + MAX_RESULT_CHARS
CHUNK = 4  # batches of prompts per generate call (and per append to examples.jsonl)


class ResumeError(ConfigError):
    """An output folder holds records made with other settings."""


def decode_config(task: Task, setting: Setting, seed: int = 0, stop: Sequence[str] = ("\n",)):
    """The paper's decoding for a task: greedy, at most one call (``setting.max_calls`` beyond the
    paper), top-k call opening; the task's ``max_new_tokens`` is the answer's budget, whatever the
    calls insert (each call gets its own room)."""
    budget = task.max_new_tokens + (0 if setting.disabled else CALL_TOKEN_BUDGET * setting.max_calls)
    return DecodeConfig(k=setting.k, max_calls=setting.max_calls, disabled=setting.disabled, max_new_tokens=budget,
                        max_answer_tokens=task.max_new_tokens, max_call_tokens=CALL_TOKENS,
                        temperature=0.0, seed=seed, stop=list(stop), force_arrow=setting.force_arrow,
                        constrain_inputs=setting.typed, drop_empty_calls=setting.drop_empty)


def _plain(obj: Any) -> Any:
    return asdict(obj) if is_dataclass(obj) else dict(obj) if isinstance(obj, Mapping) else dict(vars(obj))


def make_record(task: Task, example: Example, result: Any, seconds: float = 0.0) -> dict:
    """The JSONL record of one answered example; the metric sees the text with calls removed.

    >>> from types import SimpleNamespace as NS
    >>> from toolformer_kit.eval.tasks import get_task
    >>> ex = Example("e1", "Q\\nThe answer is", ("8",))
    >>> res = NS(text=" [Calculator(5 + 3) -> 8] 8.", calls=[NS(tool="Calculator", ok=True)])
    >>> r = make_record(get_task("svamp"), ex, res)
    >>> r["prediction"], r["correct"], r["called"], r["tool"]
    ('8.', True, True, 'Calculator')
    """
    calls = [_plain(c) for c in result.calls]
    prediction = strip_calls(result.text).strip()
    return {
        "id": example.id, "task": task.name, "prompt": example.prompt, "output": result.text,
        "prediction": prediction, "answers": list(example.answers),
        "correct": bool(task.score(prediction, example)),
        "called": bool(calls), "tool": calls[0].get("tool") if calls else None,
        "call_ok": bool(calls) and all(c.get("ok", False) for c in calls),
        "calls": calls, "meta": dict(example.meta), "seconds": round(seconds, 4),
    }


def _same_path(a, b) -> bool:
    if a == b:
        return True
    try:
        return a is not None and Path(a).exists() and Path(a).resolve() == Path(b).resolve()
    except (OSError, TypeError):
        return False


def _differs(key: str, old: dict, new: dict) -> bool:
    """Whether resuming would mix results of another run. A model is the same model wherever its
    folder lies (``model_id`` says what it is; records made before it existed compare the path
    resolved, so relative and absolute spellings agree)."""
    if key == "limit":
        return False
    if key == "model_id":
        return "model_id" in old and old["model_id"] != new["model_id"]
    if key == "model":
        return not ("model_id" in old and "model_id" in new) and not _same_path(old.get("model"), new["model"])
    return old.get(key) != new[key]


def _check_run_info(folder: Path, info: dict) -> None:
    path = folder / RUN_INFO
    if path.is_file():
        old = json.loads(path.read_text())
        changed = sorted(k for k in info if _differs(k, old, info))
        if changed:
            raise ResumeError(
                f"{folder} holds results made with different {', '.join(changed)} "
                f"({', '.join(f'{k}={old.get(k)!r}' for k in changed)}); use another --out or delete it")
    folder.mkdir(parents=True, exist_ok=True)
    write_atomic(path, json.dumps(info, indent=2))  # whole or absent: a kill mid-write left it unreadable


def _batches(todo: Sequence[Example], task: Task, setting: Setting, tools: Mapping[str, Any],
             batch_size: int) -> Iterable[tuple[list[Example], Mapping[str, Any]]]:
    """Batches that share one tool set: per-example tools (DATESET's Calendar) force batches of 1."""
    if setting.disabled or not (task.policy.calendar_from_example and "Calendar" in tools):
        shared = {} if setting.disabled else task.policy.tools_for(Example("", "", ()), tools)
        for s in range(0, len(todo), CHUNK * batch_size):
            yield list(todo[s: s + CHUNK * batch_size]), shared
        return
    for ex in todo:
        yield [ex], task.policy.tools_for(ex, tools)


def run_task(task: Task, examples: Sequence[Example], generate: GenerateFn, setting: Setting,
             tools: Mapping[str, Any], folder: Path, *, batch_size: int = 8, seed: int = 0,
             stop: Sequence[str] = ("\n",), info: Mapping[str, Any] | None = None) -> list[dict]:
    """Answer every example not yet in ``folder``; returns all records (old and new)."""
    config = decode_config(task, setting, seed, stop)
    run_info = {"task": task.name, "setting": setting.name, "seed": seed, "stop": list(stop),
                "max_new_tokens": config.max_new_tokens, "max_answer_tokens": config.max_answer_tokens,
                "tools": sorted(tools), **(info or {})}
    _check_run_info(folder, run_info)
    path = folder / RECORDS
    records = records_for_append(path)
    done = {r["id"] for r in records}
    todo = [e for e in examples if e.id not in done]
    if done:
        log.info("%s/%s: %d done, %d to go", task.name, setting.name, len(examples) - len(todo), len(todo))
    with open(path, "a", encoding="utf-8") as fh, \
            tqdm(total=len(todo), desc=f"{task.name} {setting.name}", unit="ex") as bar:
        for batch, batch_tools in _batches(todo, task, setting, tools, batch_size):
            start = time.perf_counter()
            results = generate([e.prompt for e in batch], config, batch_tools)
            each = (time.perf_counter() - start) / len(batch)
            new = [make_record(task, e, r, each) for e, r in zip(batch, results)]
            fh.write("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in new))
            fh.flush()
            records += new
            bar.update(len(batch))
    wanted = {e.id for e in examples}
    return [r for r in records if r["id"] in wanted]


def evaluate(label: str, generate: GenerateFn, tasks: Sequence[Task], settings: Sequence[Setting],
             data_dir: str | Path, out: str | Path, *, tools: Mapping[str, Any] | None = None,
             limit: int | None = None, batch_size: int = 8, seed: int = 0, stop: Sequence[str] = ("\n",),
             n_resamples: int = 1000, info: Mapping[str, Any] | None = None) -> list[dict]:
    """Every (setting, task) of one model; returns their summaries (see :func:`summarize_run`)."""

    summaries = []
    for task in tasks:
        if task.kind != "generate":
            continue
        examples = subset(task.load(data_dir), limit)
        for setting in settings:
            folder = Path(out) / label / setting.name / task.name
            records = run_task(task, examples, generate, setting, tools or {}, folder,
                               batch_size=batch_size, seed=seed, stop=stop, info=info)
            summaries.append(summarize_run(records, label, setting.name, task.name, n_resamples, seed))
            log.info("%s", _one_line(summaries[-1]))
    return summaries


def _one_line(s: dict) -> str:
    ci = s["ci95"]
    return (f"{s['model']} {s['setting']} {s['task']}: {100 * s['accuracy']:.1f}% "
            f"[{100 * ci[0]:.1f}, {100 * ci[1]:.1f}] on {s['n']} (calls {100 * s['call_rate']:.0f}%)")


def decoder_generate(lm, batch_size: int = 8) -> GenerateFn:
    """The real decoder for ``lm``'s backend (:func:`~toolformer_kit.decode.make_decoder`)
    behind the harness's interface.

    A decoder is built per tool set (DATESET needs one Calendar per example); the last few are
    kept so that the common case, one tool set for a whole task, builds one decoder.
    """
    cache: dict[tuple, Any] = {}

    def generate(prompts: list[str], config, tools: Mapping[str, Any]) -> list[Any]:
        key = tuple(sorted((name, id(tool)) for name, tool in tools.items()))
        if key not in cache:
            if len(cache) >= 4:
                cache.pop(next(iter(cache)))
            cache[key] = make_decoder(lm, tools=dict(tools), batch_size=batch_size)
        return cache[key].generate(prompts, config)

    return generate
