"""Real-model tests here run tiny forward passes, which gain nothing from a second thread but lose
ten-fold when another process holds one of two cores (OpenMP threads then wait on each other)."""

import pytest


@pytest.fixture(autouse=True)
def one_torch_thread(request):
    if request.node.get_closest_marker("real_model") is None:
        yield
        return
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(before)
