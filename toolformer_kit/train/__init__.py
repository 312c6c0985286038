"""Fine-tuning on the augmented corpus C*, and the paper's "+CC" baseline (``toolformer train``)."""

from .config import TrainConfig

__all__ = ["TrainConfig", "run_training"]


def run_training(cfg: TrainConfig) -> dict:
    """Imported lazily: the Trainer stack takes seconds to import and most commands never need it."""
    from .trainer import run_training as _run

    return _run(cfg)
