"""toolformer experiment: a run stopped by --max-minutes ends normally (exit 0, what to do next
printed); one interrupted ends as an interrupt does (130)."""

import pytest

from toolformer_kit.commands import experiment as cmd
from toolformer_kit.experiment import run as R


@pytest.mark.parametrize("on_time, code", [(True, 0), (False, 130)])
def test_a_stopped_run_says_how_to_go_on(on_time, code, monkeypatch, capsys, tmp_path):
    def stopped(cfg, command):
        assert "--max-minutes 5" in command and cfg.max_minutes == 5
        raise R.Stopped("stopped in stage evaluate (5 minutes passed): banked …; commit it, then run the same "
                        "command to go on", on_time)

    monkeypatch.setattr(R, "run_experiment", stopped)
    assert cmd.main(["math", "--max-minutes", "5", "--out", str(tmp_path / "run")]) == code
    assert "run the same command to go on" in capsys.readouterr().out
