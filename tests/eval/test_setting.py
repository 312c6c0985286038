"""Decoding settings are typed values (eval/setting.py): the fields travel, the folder names stay
what earlier runs were written under."""

import pytest

from toolformer_kit.eval.harness import decode_config
from toolformer_kit.eval.setting import DISABLED, Setting
from toolformer_kit.eval.tasks import get_task
from toolformer_kit.measures.results import tools_setting

ON_DISK = ["disabled", "k1", "k3", "k10", "k10+arrow", "k3+arrow", "k10+drop", "k10+calls2+typed+drop"]


@pytest.mark.parametrize("name", ON_DISK)
def test_every_folder_name_reads_back_to_itself(name):
    assert Setting.parse(name).name == name


def test_the_fields_reach_the_decoder_unparsed():
    svamp = get_task("svamp")
    forced = decode_config(svamp, Setting(10).arrow())
    assert (forced.k, forced.force_arrow, forced.disabled) == (10, True, False)
    off = decode_config(svamp, DISABLED)
    assert off.disabled and not off.force_arrow
    # the paper's zero-shot decoding: greedy, at most one call, a call opens on the top k
    assert decode_config(svamp, Setting(10).dropping()).drop_empty_calls
    assert not decode_config(svamp, Setting(10)).drop_empty_calls
    paper = decode_config(svamp, Setting(10))
    assert (paper.temperature, paper.max_calls, paper.k, paper.force_arrow) == (0.0, 1, 10, False)


def test_a_disabled_setting_cannot_force_an_arrow():
    with pytest.raises(ValueError, match="opens no call"):
        Setting(0, disabled=True, force_arrow=True)
    with pytest.raises(ValueError, match="unknown setting"):
        Setting.parse("disabled+arrow")


def test_the_report_finds_the_paper_s_decoding_not_the_forced_arrow(tmp_path):
    for name in ("k10+arrow", "k3", "kinds", "disabled"):
        (tmp_path / "toolformer" / name).mkdir(parents=True)
    assert tools_setting(tmp_path, prefer=Setting(10)) == Setting(3)  # k10 itself was not run
    (tmp_path / "toolformer" / "k10").mkdir()
    assert tools_setting(tmp_path, prefer=Setting(10)) == Setting(10)
    assert tools_setting(tmp_path / "nowhere") is None


def test_chained_and_typed_settings_are_their_own_folders_and_reach_the_decoder():
    from toolformer_kit.eval.config import EvalConfig
    from toolformer_kit.eval.run import settings_for

    for name in ("k10+calls2", "k10+typed", "k3+arrow+calls3+typed"):
        assert Setting.parse(name).name == name
    assert Setting.parse("tools+typed+calls2") == Setting(10, max_calls=2, typed=True)
    chained = decode_config(get_task("svamp"), Setting(10, max_calls=3, typed=True))
    paper = decode_config(get_task("svamp"), Setting(10))
    assert (chained.max_calls, chained.constrain_inputs, paper.constrain_inputs) == (3, True, False)
    assert chained.max_new_tokens - paper.max_new_tokens == 2 * (paper.max_new_tokens - paper.max_answer_tokens)
    names = [s.name for s in settings_for(EvalConfig(settings=["tools", "disabled", "k3+calls3"], max_calls=2))]
    assert names == ["k10+calls2", "disabled", "k3+calls3"]  # --max-calls 2 leaves disabled and explicit ones
    with pytest.raises(ValueError, match="unknown setting"):
        Setting.parse("k10+calls0")
    assert not Setting(10, max_calls=2).papers and Setting(10).papers
