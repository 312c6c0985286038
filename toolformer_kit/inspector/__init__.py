"""A local, read-only web page over annotation outputs and evaluation traces (``toolformer inspect``)."""
