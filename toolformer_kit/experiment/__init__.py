"""An experiment: a pipeline configuration (``recipe``) run with an evidence report (``run``, ``report``) and its cost model (``cost``)."""
