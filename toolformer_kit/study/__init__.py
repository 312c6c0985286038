"""A sweep of experiments (``run``, ``layout``), read back (``results``) and rendered (``report``), the tool latency it measures, the paper's reference numbers, and the chaining measurement."""
