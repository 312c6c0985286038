"""The search recipe v2 and its campaign (issue 28, items 4-5): what is fixed before the run."""

from pathlib import Path

from toolformer_kit.config import from_dict, load_config_file
from toolformer_kit.campaign.run import CampaignConfig
from toolformer_kit.experiment.recipe import load_recipe

ROOT = Path(__file__).resolve().parents[2]


def test_the_v2_recipe_pre_registers_its_endpoint_on_the_retrievable_examples_and_the_cloze_set():
    cfg = load_recipe("search-v2")
    assert cfg.tools == ["WikiSearch", "QA"] and cfg.tau_f == 1.0 and cfg.cstar_dataset == "datasets/cstar-search"
    assert cfg.ceiling and cfg.eval_subset == "retrievable" and "wiki-cloze" in cfg.tasks
    assert cfg.endpoint_gain == 5 and not cfg.lama_search  # the paper's rule: no WikiSearch on LAMA, QA there
    assert cfg.train_dev == "cstar" and not cfg.lora and cfg.results == "results/search"
    assert cfg.earlier_tries == ["results/search-try0"]


def test_the_campaign_banks_enough_calls_with_the_recipe_s_model():
    camp = from_dict(CampaignConfig, load_config_file(ROOT / "configs" / "campaigns" / "search.yaml"))
    recipe = load_recipe("search-v2")
    assert camp.recipe == "search" and camp.tau_f == 1.0 and camp.target_calls >= 1000 and (camp.k, camp.m) == (5, 5)
    assert camp.model == recipe.model  # one M samples, scores and is fine-tuned
    assert camp.out == recipe.cstar_dataset and set(camp.tasks) == set(recipe.tasks)


def test_the_funnel_counts_a_call_to_any_tool_the_task_allows_as_the_right_tool():
    from toolformer_kit.experiment.report import tool_of

    tools = tool_of(load_recipe("search-v2"))
    assert tools["lama-trex"] == "QA" and tools["webquestions"] == "WikiSearch"  # the paper's rules
    assert set(tools["wiki-cloze"]) == {"WikiSearch", "QA"}  # held-out facts allow both


def test_an_endpoint_without_a_well_formed_condition_does_not_print_one():
    from toolformer_kit.experiment.report import _endpoint_blocks

    e = {"gain": 5, "well_formed_required": 0, "pooled_diff": 0.146, "pooled_ci95": [0.11, 0.182], "gain_met": True,
         "well_formed": {"rate": 1.0, "well_formed": 9, "opened": 9}, "well_formed_met": True, "met": True}
    text = _endpoint_blocks(e)[1].text
    assert "no condition on well-formed calls" in text and "≥ 0 %" not in text and "+14.6 points" in text


def test_a_report_built_on_a_published_dataset_shows_the_card_s_kept_table(tmp_path):
    import json

    from toolformer_kit.experiment.report import _annotation_blocks, _card_summary

    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "summary.json").write_text(json.dumps({
        "windows_annotated": 10, "windows_selected": 50, "annotation_seconds": 7200, "windows_per_hour": 5.0,
        "scored": 40, "candidates_score_ge_0": 12, "target_calls": 8,
        "kept": [{"tau_f": 1.0, "calls": 9, "texts": 6, "by_tool": {"QA": 7, "WikiSearch": 2}, "by_position_rank": {}}]}))
    card = _card_summary(tmp_path)
    blocks = _annotation_blocks({"annotation": {"from_dataset": str(tmp_path), "documents": 10, "c_star_texts": 6,
                                                "c_star_calls": 9, "card": card}})
    table = next(b for b in blocks if b.kind == "table")
    assert list(table.rows) == [("1", 9, 6, "QA: 7, WikiSearch: 2")]
    assert "2.0 h of compute" in blocks[-2].text
    assert _card_summary(tmp_path / "missing") is None


def test_base_reference_adds_the_base_model_s_column_without_training_cc(tmp_path):
    import dataclasses

    from toolformer_kit.experiment.cost import estimate
    from toolformer_kit.experiment.run import model_runs, plan
    from toolformer_kit.pipeline.report import deviations
    from toolformer_kit.config import to_dict

    cfg = dataclasses.replace(load_recipe("search-v2"), base_reference=True, references=False)
    labels = [label for label, _, _ in model_runs(cfg, tmp_path)]
    assert labels == ["base", "toolformer"] and "train (+CC)" not in [s for s, _, _ in plan(cfg, tmp_path, "")]
    without = dataclasses.replace(cfg, base_reference=False)
    assert [label for label, _, _ in model_runs(without, tmp_path)] == ["toolformer"]
    assert estimate(cfg, False)["evaluate"] > estimate(without, False)["evaluate"]
    assert any("+CC is not trained" in d for d in deviations(to_dict(cfg)))


def test_against_base_pairs_the_tool_model_with_the_base_model_per_task_and_pooled(tmp_path):
    import json

    from toolformer_kit.eval.verdict import RECORDS
    from toolformer_kit.measures.results import LABEL, against_base

    def write(label, setting, task, correct):
        folder = tmp_path / label / setting / task
        folder.mkdir(parents=True)
        (folder / RECORDS).write_text("".join(json.dumps({"id": str(i), "correct": c, "called": label == LABEL}) + "\n"
                                              for i, c in enumerate(correct)))

    write(LABEL, "k10", "a", [True, True, False, True])
    write("base", "disabled", "a", [False, True, False, False])
    write(LABEL, "k10", "b", [True, False])
    write("base", "disabled", "b", [True, False])
    rows = against_base(tmp_path, ["a", "b"], "k10")
    assert [r["task"] for r in rows] == ["a", "b", "pooled"]
    assert rows[0]["n"] == 4 and round(rows[0]["diff"], 2) == 0.5 and rows[2]["n"] == 6
    assert against_base(tmp_path, ["a"], "k3") == []  # no tool column: nothing to pair
