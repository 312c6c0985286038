"""The stages both runners call (pipeline/stages.py): the search index is built for the tools that
search it and for nothing else, and fresh windows are made only for an annotation yet to run."""

from toolformer_kit.annotate.config import AnnotateConfig
from toolformer_kit.pipeline import stages
from toolformer_kit.tools.base import Tool


def _built(monkeypatch) -> list:
    built = []
    index = Tool("WikiSearch", str, "", [("a", "b")], prepare=lambda: built.append("index"))
    monkeypatch.setattr(stages, "get_tool", lambda name: index)
    return built


def test_the_index_is_built_for_the_search_tools_and_a_stage_that_asks(monkeypatch):
    built = _built(monkeypatch)
    stages.prepare_index(["Calculator", "MT", "Calendar"])
    assert built == []  # the pipeline once built it for QA and recipes did not: one rule now
    for tools, search in ((["QA"], False), (["WikiSearch", "Calculator"], False), (["Calculator"], True)):
        stages.prepare_index(tools, search=search)
    assert built == ["index"] * 3


def test_fresh_windows_are_made_only_for_an_annotation_yet_to_finish(tmp_path, monkeypatch):
    made, ran = [], []
    monkeypatch.setattr(stages, "Runner", lambda acfg, documents: type("R", (), {"run": lambda self: ran.append(documents)})())
    acfg = AnnotateConfig(corpus="default", out=str(tmp_path / "annotate"))
    assert stages.annotate(acfg, lambda: made.append(1) or ["w"]) == tmp_path / "annotate"
    assert (made, ran) == ([1], [["w"]])
    monkeypatch.setattr(stages, "annotation_done", lambda acfg: True)
    stages.annotate(acfg, lambda: made.append(1) or ["w"])
    assert (made, ran) == ([1], [["w"]])  # a finished annotation is never re-cut
