"""Issue 29: ``toolformer experiment`` killed with SIGKILL inside a stage and run again ends with
the outputs of an uninterrupted run; a run folder copied elsewhere, with files cut by a kill or an
edit, resumes to the same. The short form of benchmarks/campaign_sigkill_experiment.py (20 points):
the real command in a subprocess on its tiny bigram Llama (SmolLM2's tokenizer, every stage real)."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import pytest

pytestmark = [pytest.mark.slow, pytest.mark.real_model]  # the pulled SmolLM2 tokenizer; ~2 min on two cores

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
import campaign_sigkill_experiment as campaign  # noqa: E402


@pytest.fixture(scope="module")
def reference(tmp_path_factory):
    work = tmp_path_factory.mktemp("sigkill-exp")
    model = campaign.tiny_model(work / "tiny-llama")
    recipe = work / "tiny.yaml"
    recipe.write_text(campaign.RECIPE.format(model=model))
    outputs, durations, total, starts = campaign.reference(work, recipe)
    return work, recipe, outputs, durations, total, starts


@pytest.mark.parametrize("point, stage", [(1, "annotate"), (2, "train (tools)"), (3, "evaluate")])
def test_a_kill_inside_a_stage_resumes_to_the_uninterrupted_outputs(reference, point, stage):
    work, recipe, ref, durations, total, starts = reference
    row = campaign.trial(work, recipe, point, stage, durations[stage] / 2, starts[stage], limit=60 * total)
    assert row["rc"] == 0 and not row["errors"], row
    assert campaign.differences(ref, campaign.outputs(row["out"], row["results"])) == []


def test_a_copied_run_with_cut_files_resumes_to_the_same_outputs(reference):
    """The run folder moved elsewhere (item 8: the evaluation compared the model's path), its C*
    and an evaluation record cut as by a kill or a full disk (item 7: the stage was skipped and the
    cut C* used), its report gone."""
    work, recipe, ref = reference[:3]
    moved = work / "moved"
    shutil.copytree(work / "ref", moved)
    corpus = moved / "run" / "annotate" / "corpus.jsonl"
    corpus.write_bytes(corpus.read_bytes()[:-40])
    examples = sorted((moved / "run" / "eval").glob("*/*/*/examples.jsonl"))[0]
    examples.write_bytes(examples.read_bytes()[:-15])
    shutil.rmtree(moved / "results")
    run = campaign.Run(campaign.command(recipe, moved / "run", moved / "results"), work / "moved.log")
    assert run.wait() == 0, (work / "moved.log").read_text()[-3000:]
    assert campaign.differences(ref, campaign.outputs(moved / "run", moved / "results", str(work / "ref"))) == []
