"""Issue 44's campaign rows (T1, D2, W2 and the lock): a damaged bank is named or redone, a
published dataset is never replaced by a smaller run, --max-windows means windows, one campaign
per folder. Each runs the campaign with the fake model of test_campaign_run."""

import json
import logging

import pytest

from toolformer_kit.config import ConfigError
from toolformer_kit.campaign import run as C
from toolformer_kit.files import DamagedFileError

from test_campaign_run import run, small_corpus  # noqa: F401  (the fixture)

DAMAGE = {
    "a garbage line in a shard": ("shard-00001.jsonl", lambda t: t + "garbage\n"),
    "a cut line": ("shard-00001.jsonl", lambda t: t + '{"doc_id": "g1", "tool": "Calc'),
    "a line that is not a candidate": ("shard-00001.jsonl", lambda t: t + '{"doc_id":"x"}\n'),
    "a cut shard record": ("shard-00001.json", lambda t: t[: len(t) // 2]),
    "an empty shard record": ("shard-00001.json", lambda t: ""),
    "a shard record holding []": ("shard-00001.json", lambda t: "[]"),
    "a shard record of other windows": ("shard-00001.json",
                                        lambda t: json.dumps(dict(json.loads(t), windows=["g3"]))),
}


def _damage(bank, name, edit):
    path = bank / name
    path.write_text(edit(path.read_text()))


@pytest.mark.parametrize("case", DAMAGE)
def test_a_damaged_shard_is_annotated_again_and_the_dataset_is_as_if_uninterrupted(tmp_path, small_corpus,
                                                                                   caplog, case):
    run(tmp_path, "clean", target_calls=0, max_windows=3)
    run(tmp_path, "out", target_calls=0, max_windows=3)
    _damage(tmp_path / "out" / "bank", *DAMAGE[case])
    with caplog.at_level(logging.WARNING):
        run(tmp_path, "out", target_calls=0, max_windows=3)
    assert "shard-00001" in caplog.text and "Annotating shard 1 again" in caplog.text
    for f in ("data/cstar.jsonl", "data/documents.jsonl", "bank/shard-00001.jsonl"):
        assert (tmp_path / "out" / f).read_bytes() == (tmp_path / "clean" / f).read_bytes(), f


@pytest.mark.parametrize("case", ["a garbage line in a shard", "a shard record holding []"])
def test_a_damaged_shard_of_a_bank_only_read_is_one_error_with_the_fix(tmp_path, small_corpus, case):
    run(tmp_path, "src", target_calls=0, max_windows=3)
    _damage(tmp_path / "src" / "bank", *DAMAGE[case])
    with pytest.raises(DamagedFileError, match=r"shard-00001.*git checkout"):
        run(tmp_path, "v2", target_calls=0, max_windows=3, bank=str(tmp_path / "src"))


@pytest.mark.parametrize("text", ['{"format": "toolformer-kit camp', "", "[1]"])
def test_a_damaged_campaign_head_is_one_error_naming_it_and_the_fix(tmp_path, small_corpus, text):
    run(tmp_path, "out", target_calls=0, max_windows=2)
    (tmp_path / "out" / "bank" / "campaign.json").write_text(text)
    with pytest.raises(DamagedFileError, match=r"campaign\.json is damaged.*git checkout.*new --out"):
        run(tmp_path, "out", target_calls=0, max_windows=2)


def test_a_smaller_run_never_replaces_a_published_dataset(tmp_path, small_corpus):
    run(tmp_path, "out", target_calls=0)
    before = (tmp_path / "out" / "data" / "cstar.jsonl").read_bytes()
    with pytest.raises(ConfigError, match="holds 4 annotated windows.*at most 2.*--replace-dataset"):
        run(tmp_path, "out", target_calls=0, max_windows=2)
    assert (tmp_path / "out" / "data" / "cstar.jsonl").read_bytes() == before
    s = run(tmp_path, "out", target_calls=0, max_windows=2, replace_dataset=True)
    assert s["windows_annotated"] == 2


def test_max_windows_counts_windows_not_shards(tmp_path, small_corpus):
    s = run(tmp_path, "out", target_calls=0, max_windows=1, shard_size=4)
    assert s["windows_annotated"] == 1
    s = run(tmp_path, "out", target_calls=0, shard_size=4)  # shard 0 grows from 1 window to 4: redone
    assert s["windows_annotated"] == 4


def test_a_second_campaign_into_the_same_folder_is_refused(tmp_path, small_corpus):
    with C.campaign_lock(tmp_path / "out"):
        with pytest.raises(ConfigError, match=r"another campaign is writing .*pid \d+"):
            run(tmp_path, "out", target_calls=0)
    assert run(tmp_path, "out", target_calls=0)["windows_annotated"] == 4  # released


def test_w3_the_card_names_the_model_and_settings_it_ran_with(tmp_path, small_corpus):
    cfg = C.CampaignConfig(out=str(tmp_path / "out"), work=str(tmp_path / "w"), model="smollm2-135m", k=2, m=2,
                           shard_size=1, progress=False, target_calls=0)
    from annotate.fakes import FakeEngine, FakeLM, calculator_tool
    from toolformer_kit.annotate.execute import Executor

    C.run_campaign(cfg, lm=FakeLM(), tools=[calculator_tool()], executor=Executor(engine_factory=FakeEngine))
    card = (tmp_path / "out" / "README.md").read_text()
    assert "Qwen" not in card and "qwen" not in card and "at the paper's settings" not in card
    assert "smollm2-135m as M" in card and "k 2 positions × m 2 calls" in card
    assert "(not the paper's Calculator settings: k 20 × m 10" in card
