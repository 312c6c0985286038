"""The call probe (issue 27, item 1) on the scripted fake LM: opened right at the cut, well-formed
or not, and points where the model writes on without a call."""

from decode_fakes import FakeLM, Story

from toolformer_kit.decode.hf import ToolAwareDecoder
from toolformer_kit.eval.probe import call_probe, probe_points
from toolformer_kit.tools import get_tool

TEXTS = ["It costs [Calculator(2 + 3) -> 5] 5 dollars.",
         "Then it costs [Calculator(1 + 1) -> 2] 2 euros.",
         "Later it costs [Calculator(4 + 4) -> 8] 8 pounds.",
         "No call in this one."]


def test_probe_counts_opened_well_formed_and_silent_points():
    points = probe_points(TEXTS)
    assert [p.prefix for p in points] == ["It costs", "Then it costs", "Later it costs"]
    stories = [Story("It costs", " 5 dollars.", ranks={0: 0}),  # opens, writes Calculator(2 + 3) ->
               Story("Then it costs", " 2 euros.", ranks={0: 0}, call="Calculator(" + "1 + " * 30),  # too long
               Story("Later it costs", " 8 pounds.", ranks={})]  # never opens
    decoder = ToolAwareDecoder(FakeLM(stories), tools={"Calculator": get_tool("Calculator")})
    out = call_probe(decoder.generate, points)
    assert out == {"points": 3, "opened": 2, "open_rate": 2 / 3, "well_formed": 1, "well_formed_rate": 0.5,
                   "same_tool": 2}
