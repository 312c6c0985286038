"""Building what annotates a shard — models, tools, tool executor, :class:`~.stages.ShardAnnotator`
— from an :class:`~.config.AnnotateConfig`, the same way for both engines: the local runner and
each Ray actor call :func:`build_annotator`, so an actor never builds a whole runner to reach it."""

from __future__ import annotations

from pathlib import Path

from ..config import ConfigError
from ..lm.base import load_lm, resolve_dtype
from ..tools import get_tool
from ..tools.base import AnnotationSettings
from .config import AnnotateConfig, tool_settings
from .execute import Executor
from .hooks import hooks
from .stages import ShardAnnotator


def tool_cache(cfg: AnnotateConfig) -> str:
    """The tool result cache: ``--tool-cache``, else ``<out>/tool-cache.sqlite``."""
    return cfg.tool_cache or str(Path(cfg.out) / "tool-cache.sqlite")


def load_models(cfg: AnnotateConfig, lm=None, sampler=None):
    """(scoring model, sampling model); given ones are kept (tests, benchmarks). The sampler is the
    scoring model itself unless ``--sampler-model`` names another."""
    resolve_dtype(cfg.dtype)  # a bad --dtype fails here, before any model loads
    kw = {"device": cfg.device} if cfg.device else {}
    kw.update(backend=cfg.backend, dtype=cfg.dtype)
    if lm is None:
        lm = load_lm(cfg.model, **kw)
    if sampler is None:
        same = not cfg.sampler_model or cfg.sampler_model == cfg.model
        sampler = lm if same else load_lm(cfg.sampler_model, **kw)
    return lm, sampler


def annotation_tool(cfg: AnnotateConfig, name: str):
    """The registered tool ``name``; WikiSearch and QA over ``cfg.wiki_corpus`` when it is set, so
    what annotation can find is exactly that corpus (the held-out summaries are not in it)."""
    on_corpus = hooks(name).on_corpus
    if cfg.wiki_corpus and on_corpus is not None:
        if not Path(cfg.wiki_corpus).is_file():
            raise ConfigError(f"--wiki-corpus {cfg.wiki_corpus} does not exist; give a JSONL (title, text) file")
        return on_corpus(cfg.wiki_corpus)
    return get_tool(name)


def resolve_tools(cfg: AnnotateConfig, tools=None) -> tuple[list, dict[str, AnnotationSettings]]:
    """The tools to annotate, each checked to have an annotation prompt, and each one's settings
    (its own, then the run's overrides): cheap, so it runs before any model loads."""
    tools = [annotation_tool(cfg, name) for name in cfg.tools] if tools is None else tools
    for tool in tools:
        try:
            tool.prompt_prefix()
        except ValueError as exc:
            raise ConfigError(str(exc)) from None
    return tools, {tool.name: tool_settings(cfg, tool) for tool in tools}


def build_annotator(cfg: AnnotateConfig, lm=None, sampler=None, tools=None, executor=None,
                    settings: dict | None = None) -> ShardAnnotator:
    """The per-shard annotator; anything not given is built from ``cfg``."""
    if tools is None or settings is None:
        tools, settings = resolve_tools(cfg, tools)
    lm, sampler = load_models(cfg, lm, sampler)
    executor = executor or Executor(cfg.tool_timeout, tool_cache(cfg))
    return ShardAnnotator(cfg, lm, tools, sampler, executor, settings)
