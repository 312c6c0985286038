"""campaign/merged.py and `toolformer merge`: the merged C* joins published datasets, writes a
window annotated by two of them once with both calls, caps each tool, states the mix."""

import json
from pathlib import Path

import pytest

from toolformer_kit.campaign.merged import build_merged, merge_rows
from toolformer_kit.config import ConfigError

REPO = Path(__file__).resolve().parents[2]
TEXT = "It cost 5 dollars in Paris."


def _row(doc_id, calls, text=TEXT):
    from toolformer_kit.annotate.merge import annotate_text
    from toolformer_kit.annotate.records import Candidate

    cands = [Candidate(doc_id, t, 0, o, 0.0, "", input=i, result=r) for t, i, r, o in calls]
    return {"id": doc_id, "original": text, "text": annotate_text(text, cands),
            "calls": [{"tool": t, "input": i, "result": r, "char_offset": o, "score": 1.0} for t, i, r, o in calls]}


def _dataset(root, name, rows, docs):
    data = root / name / "data"
    data.mkdir(parents=True)
    (data / "cstar.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    (data / "documents.jsonl").write_text("".join(json.dumps(d) + "\n" for d in docs))
    return str(root / name)


def test_a_window_of_two_datasets_holds_both_calls_once(tmp_path):
    calc = _row("w1", [("Calculator", "2 + 3", "5", 7)])
    search = _row("w1", [("WikiSearch", "Paris", "Paris is a city.", 20)])
    other = _row("w2", [("Calculator", "1 + 1", "2", 7)], text="It cost 2 dollars.")
    a = _dataset(tmp_path, "a", [calc, other], [{"id": "w1", "text": TEXT}, {"id": "w2", "text": "It cost 2 dollars."}])
    b = _dataset(tmp_path, "b", [search], [{"id": "w1", "text": TEXT}])
    s = build_merged([a, b], tmp_path / "all", cap=10, seed=0, command="toolformer merge --datasets a,b")
    rows = {r["id"]: r for r in map(json.loads, (tmp_path / "all" / "data" / "cstar.jsonl").open())}
    assert rows["w1"]["text"] == "It cost [Calculator(2 + 3) -> 5] 5 dollars in [WikiSearch(Paris) -> Paris is a city.] Paris."
    assert rows["w1"]["from"] == [a, b] and len(rows["w1"]["calls"]) == 2
    assert rows["w2"]["text"] == other["text"]  # a text of one dataset is written as published
    assert s["calls_by_tool"] == {"Calculator": 2, "WikiSearch": 1} and s["texts"] == 2 and s["documents"] == 2
    card = (tmp_path / "all" / "README.md").read_text()
    assert "3 calls in 2 texts" in card and "toolformer merge --datasets a,b" in card


def test_each_tool_is_capped_and_the_order_is_seeded():
    rows = [_row(f"w{i}", [("Calculator", "2 + 3", "5", 7)]) for i in range(6)]
    capped = merge_rows([("a", rows)], cap=4, seed=0)
    assert len(capped) == 4 and merge_rows([("a", rows)], cap=4, seed=0) == capped
    orders = {tuple(r["id"] for r in merge_rows([("a", rows)], cap=100, seed=seed)) for seed in range(3)}
    assert len(orders) > 1  # the seed decides the order


def test_a_folder_without_a_cstar_is_one_clear_error(tmp_path):
    with pytest.raises(ConfigError, match="no data/cstar.jsonl"):
        build_merged([str(tmp_path)], tmp_path / "out")


def test_the_command_runs_on_the_published_datasets(tmp_path, capsys):
    from toolformer_kit.commands.merge import main

    names = [REPO / "datasets" / d for d in ("cstar-math-v2", "cstar-search-v2")]
    assert main(["--datasets", ",".join(map(str, names)), "--out", str(tmp_path / "all")]) == 0
    summary = json.loads((tmp_path / "all" / "data" / "summary.json").read_text())
    published = [sum(1 for _ in open(d / "data" / "cstar.jsonl")) for d in names]
    assert summary["texts"] == sum(published)  # no window is in both, so every text stays one row
    assert set(summary["calls_by_tool"]) == {"Calculator", "WikiSearch", "QA"}
    assert "written to" in capsys.readouterr().out


def test_the_card_says_which_datasets_were_still_banking_when_merged(tmp_path):
    done = _dataset(tmp_path, "a", [_row("x", [("Calculator", "2+3", "5", 8)])], [])
    going = _dataset(tmp_path, "b", [_row("y", [("MT", "chat", "cat", 3)])], [])
    (Path(done) / "data" / "summary.json").write_text(json.dumps({"complete": True, "stopped": "target", "target_calls": 300}))
    (Path(going) / "data" / "summary.json").write_text(json.dumps({"complete": False, "stopped": "time", "target_calls": 1000}))
    build_merged([done, going], tmp_path / "all")
    card = (tmp_path / "all" / "README.md").read_text()
    assert "| complete (stopped by target; target 300 calls) |" in card
    assert "| in progress (stopped by time; target 1000 calls) |" in card and "A snapshot" in card
