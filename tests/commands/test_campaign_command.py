"""`toolformer campaign`: its flags are CampaignConfig's fields, one each, by the same names."""

import dataclasses

import pytest

from toolformer_kit.campaign.run import CampaignConfig
from toolformer_kit.commands import campaign


def test_every_campaign_setting_has_its_flag(capsys):
    with pytest.raises(SystemExit):
        campaign.main(["--help"])
    out = capsys.readouterr().out
    missing = [f.name for f in dataclasses.fields(CampaignConfig) if "--" + f.name.replace("_", "-") not in out]
    assert missing == []


def test_a_rerun_without_a_bank_is_one_clear_error(tmp_path, capsys):
    assert campaign.main(["--out", str(tmp_path / "out"), "--rerun-tools", "QA"]) == 2
    err = capsys.readouterr().err
    assert "--bank" in err and "Traceback" not in err
    assert not (tmp_path / "out").exists()


def test_sigterm_stops_a_campaign_as_ctrl_c_does_and_the_exit_code_says_so(tmp_path, monkeypatch, capsys):
    import os
    import signal
    import time

    from toolformer_kit.campaign import run as C

    def run_campaign(cfg):  # stands in for the shard loop: SIGTERM arrives while a shard is under way
        try:
            os.kill(os.getpid(), signal.SIGTERM)
            time.sleep(5)
        except KeyboardInterrupt:
            return {"kept": [], "stopped": "interrupt", "complete": False, "windows_annotated": 0,
                    "windows_selected": 4, "windows_per_hour": None}
        return {}

    monkeypatch.setattr(C, "run_campaign", run_campaign)
    before = signal.getsignal(signal.SIGTERM)
    assert campaign.main(["--out", str(tmp_path / "out")]) == 130
    assert "stopped by interrupt (rerun the same command to go on)" in capsys.readouterr().out
    assert signal.getsignal(signal.SIGTERM) == before  # the handler is the command's only while it runs
