"""train.trainer.SaveOnTime: a timed checkpoint is decided once for every process (a DeepSpeed
save is collective), here over two CPU processes with gloo."""

import os

import torch
import torch.distributed as dist
import torch.multiprocessing as mp

from toolformer_kit.train.trainer import _on_every_rank


def _rank(rank: int, port: int, out) -> None:
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    dist.init_process_group("gloo", rank=rank, world_size=2)
    try:
        out[rank] = _on_every_rank(rank == 1, torch.device("cpu"))  # the clocks disagree: rank 1 is due
    finally:
        dist.destroy_process_group()


def test_every_rank_takes_rank_zero_s_decision():
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    out = mp.Manager().dict()
    mp.spawn(_rank, args=(port, out), nprocs=2, join=True)
    assert dict(out) == {0: False, 1: False}


def test_without_a_process_group_the_flag_is_its_own():
    assert _on_every_rank(True, torch.device("cpu")) is True
