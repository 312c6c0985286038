"""Zero-shot evaluation as in the paper's §4: tasks, metrics, the harness, perplexity and reports.

* :mod:`.tasks` — the task registry and the loaders for the published benchmark formats;
* :mod:`.metrics` — answer normalisation and the paper's lenient metrics (pure functions);
* :mod:`.dateset` — the DATESET generator (Appendix D);
* :mod:`.harness` — runs tasks through a tool-aware generator, resumably, one JSONL record each;
* :mod:`.perplexity` — WikiText-2 / held-out perplexity with calls disabled (Table 8);
* :mod:`.report` — summaries with bootstrap intervals, AC/NC (Table 9), tables and plots.

The command line is ``toolformer eval`` (:mod:`toolformer_kit.commands.eval`).
"""
