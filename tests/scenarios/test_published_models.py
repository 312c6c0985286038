"""The models committed under models/ load in a fresh clone and use their tools (issue 42: a model
that outlives the machine that trained it). Run through the CLI, as a user would."""

import json
from pathlib import Path

import pytest

from toolformer_kit.commands.cli import main

pytestmark = pytest.mark.real_model

MODELS = Path(__file__).resolve().parents[2] / "models"

# SVAMP chal-448 (dev split), as the evaluation prompts it: the problem, then "The answer is".
SVAMP = ("Every day Ryan spends a total of 3 hours on learning english and chinese. If he spends 2 hours on "
         "learning english everyday. How many hours does he spend on learning chinese?\nThe answer is")


@pytest.mark.parametrize("dtype", ["fp32", "auto"])
def test_the_maths_adapter_answers_an_svamp_problem_with_a_calculator_call(capsys, dtype):
    folder = MODELS / "qwen-math-lora"
    assert (folder / "adapter_model.safetensors").stat().st_size < 25e6  # the bound on a published model
    rc = main(["generate", "--model", str(folder), "--tools", "Calculator", "--dtype", dtype, "--json",
               "--max-new-tokens", "20", SVAMP])
    assert rc == 0
    res = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    call = res["calls"][0]
    assert (call["tool"], call["ok"], call["result"]) == ("Calculator", True, "1")
    assert res["text"].split("]", 1)[1].split()[0] == "1"  # the answer after the call is the tool's result
