"""Toolformer (Schick et al., 2023) as a package: annotate, fine-tune, decode and evaluate with tools."""

__version__ = "0.1.0"
