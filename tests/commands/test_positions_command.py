"""`toolformer positions` on a real model: p_i over a text, the likeliest positions listed."""

import pytest

from toolformer_kit.commands import positions


@pytest.mark.real_model
def test_positions_prints_the_top_positions_of_a_real_model(capsys):
    assert positions.main(["--model", "smollm2-135m", "--top", "3"]) == 0
    out = capsys.readouterr().out
    listed = [line for line in out.splitlines() if line.strip().startswith("before token")]
    assert len(listed) == 3
    probs = [float(line.split("p = ")[1].split()[0]) for line in listed]
    assert probs == sorted(probs, reverse=True) and all(0 <= p <= 1 for p in probs)
