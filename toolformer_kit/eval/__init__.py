"""Zero-shot evaluation as in the paper's §4: tasks, metrics, the harness, perplexity and reports.

* :mod:`.tasks` — the task registry and the loaders for the published benchmark formats;
* :mod:`.metrics` — answer normalisation and the paper's lenient metrics (pure functions);
* :mod:`.dateset` — the DATESET generator (Appendix D);
* :mod:`.harness` — runs tasks through a tool-aware generator, resumably, one JSONL record each;
* :mod:`.perplexity` — WikiText-2 / held-out perplexity with calls disabled (Table 8);
* :mod:`.records` — the per-example record file both the harness and the report read;
* :mod:`.report` — summaries with bootstrap intervals, AC/NC (Table 9), tables and plots.

:mod:`.config` holds :class:`~.config.EvalConfig` and the data-folder rule, and :mod:`.run` one
whole run as a library call; the command line is ``toolformer eval`` (:mod:`toolformer_kit.commands.eval`).
"""
