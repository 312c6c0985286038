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
