"""annotate/hooks.py: a tool's special handling during annotation is one table entry, and the
stages never switch on a tool's name."""

import re
from pathlib import Path

from toolformer_kit.annotate import hooks as H
from toolformer_kit.annotate.config import AnnotateConfig
from toolformer_kit.annotate.document import Document
from toolformer_kit.annotate.stages import ShardStats, doc_tool, eligible
from toolformer_kit.tools import BUILTIN
from toolformer_kit.tools.base import Tool

PACKAGE = Path(H.__file__).parent


def test_a_new_tool_with_a_hook_entry_is_pre_filtered_and_bound_by_it(monkeypatch):
    echo = Tool("Echo", str.upper, "Echo text.", [("a", "[Echo(a)] a")])
    seen = []
    monkeypatch.setitem(H.HOOKS, "Echo", H.AnnotationHooks(keep=lambda d, cfg: "loud" in d.text,
                                                            bind=lambda tool, d: seen.append(d.doc_id) or tool))
    docs = [Document("a", "a loud text"), Document("b", "a quiet text")]
    stats = ShardStats()
    pairs = eligible(echo, docs, AnnotateConfig(tools=["Calculator"]), stats)
    assert [d.doc_id for d, _ in pairs] == ["a"] and seen == ["a", "b"]
    assert stats.counts["Echo"]["skipped_prefilter"] == 1
    # without an entry, a tool is plain: no pre-filter, executed as it is (it declares no corpus)
    plain = Tool("Plain", str.upper, "Plain.", [("a", "[Plain(a)] a")])
    assert H.hooks("Plain") is H.PLAIN and len(eligible(plain, docs, AnnotateConfig(), ShardStats())) == 2
    assert doc_tool(plain, docs[0]) is plain


def test_the_built_in_hooks_are_the_papers():
    assert set(H.HOOKS) <= set(BUILTIN)
    assert H.hooks("Calculator").keep and H.hooks("MT").keep and H.hooks("MT").leaks
    undated = Document("x", "No date here.")
    assert H.hooks("Calendar").bind(None, undated) is None


def test_no_annotation_stage_switches_on_a_built_in_tools_name():
    names = "|".join(BUILTIN)
    switch = re.compile(rf"""(==|!=|\bin)\s*\(?["']({names})["']""")
    for module in ("stages.py", "build.py", "runner.py", "sample.py", "execute.py"):
        text = (PACKAGE / module).read_text()
        assert not switch.search(text), f"{module} switches on a tool's name; add an entry to annotate/hooks.py"
