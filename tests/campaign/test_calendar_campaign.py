"""The Calendar campaign (issue 42, item 1) with a fake M: dated changelog texts, Calendar calls
bound to each text's own date, the corpus frozen in the dataset, the card naming the recipe."""

import json

from toolformer_kit.annotate.document import Document
from toolformer_kit.annotate.execute import Executor
from toolformer_kit.campaign import run as C
from toolformer_kit.corpora.selection import Selection
from toolformer_kit.lm.base import Sample
from toolformer_kit.tools import get_tool

from annotate.fakes import FakeEngine, FakeLM

TEXTS = [("changelog:aa:1.0-2", "Jo Doe uploaded aa 1.0-2 to Debian unstable on Tuesday, June 29, 2010.\n"
          "* Fix the build.", "Tue, 29 Jun 2010 09:13:05 +0200"),
         ("changelog:bb:2.1-1", "Al Roe uploaded bb 2.1-1 to Debian unstable on Wednesday, September 28, 2022.\n"
          "* New upstream release.", "Wed, 28 Sep 2022 16:50:07 +0200")]


class CalendarLM(FakeLM):
    """Samples the Calendar call (it takes no input); scores digits better when the result holds them."""

    def sample(self, prefixes, n, stop="]", config=None):
        self.calls["sample"] += 1
        return [[Sample("Calendar()]", True)] * n for _ in prefixes]


def test_a_calendar_campaign_keeps_calls_that_give_the_texts_own_date(tmp_path, monkeypatch):
    selected = []

    def select(seed):
        selected.append(seed)
        return Selection([Document(i, t, {"source": "changelog", "package": i.split(":")[1], "date": d})
                          for i, t, d in TEXTS], {"changelogs": 2, "entries": 2, "in_word_range": 2, "documents": 2})

    monkeypatch.setattr(C, "calendar_selection", select)
    cfg = C.CampaignConfig(recipe="calendar", out=str(tmp_path / "cal"), work=str(tmp_path / "work"), k=3, m=2,
                           tau_s=0.05, tau_f=0.5, shard_size=1, progress=False, target_calls=0, merge="sequential")
    C.run_campaign(cfg, lm=CalendarLM(), tools=[get_tool("Calendar")], executor=Executor(engine_factory=FakeEngine))
    cstar = [json.loads(line) for line in (tmp_path / "cal" / "data" / "cstar.jsonl").open()]
    results = {r["id"]: {c["result"] for c in r["calls"]} for r in cstar}
    assert results == {"changelog:aa:1.0-2": {"Today is Tuesday, June 29, 2010."},
                       "changelog:bb:2.1-1": {"Today is Wednesday, September 28, 2022."}}
    merge = json.loads((tmp_path / "cal" / "data" / "summary.json").read_text())["merge"]
    # every later Calendar call of a text is re-scored with the earlier ones written in (the fake M
    # reads only the call in front of the text, so here they still pass; a real M sees them)
    assert merge["merge"] == "sequential" and merge["rescored"] == sum(len(r["calls"]) - 1 for r in cstar) > 0
    frozen = [json.loads(line)["id"] for line in (tmp_path / "cal" / "corpus" / "documents.jsonl").open()]
    assert frozen == [i for i, _, _ in TEXTS]
    card = (tmp_path / "cal" / "README.md").read_text()
    assert card.startswith("---") and "# C* for the Calendar" in card and "--config configs/campaigns/calendar.yaml" in card
    # resumed on "another machine": the frozen copy is read, nothing is selected again
    C.run_campaign(cfg, lm=CalendarLM(), tools=[get_tool("Calendar")], executor=Executor(engine_factory=FakeEngine))
    assert selected == [0]
