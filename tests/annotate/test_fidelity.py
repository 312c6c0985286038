"""Where calls may go (issue 13, items 1, 1b, 1c, 2), on fakes, real tokenizers and Hypothesis texts.

* calls only between words, never inside a number, never two at one offset, and C* gives back
  the original text byte for byte once its calls are stripped;
* never at a document's first word, never inside a window's left context;
* WikiSearch never returns the document being annotated;
* the text to annotate is tokenized as it is inside a demonstration.
"""

import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from toolformer_kit.annotate.config import AnnotateConfig
from toolformer_kit.annotate.corpus import windowed
from toolformer_kit.annotate.document import Document
from toolformer_kit.annotate.execute import Executor
from toolformer_kit.annotate.merge import annotate_text
from toolformer_kit.annotate.positions import LEAD, call_sites, char_offset
from toolformer_kit.annotate.records import Candidate
from toolformer_kit.annotate.runner import Runner
from toolformer_kit.calls import find_calls, strip_calls

from .fakes import FakeEngine, FakeLM, calculator_tool

NUMBERS = ["The club has 1050 members and 250 more joined, 1300 in all.",
           "8 apples and 9.5 pears: 17.5 pieces of fruit.",
           "Prices rose (by 12%) to $4,500 in 2021;\nthen fell 300 dollars.\n\nNow 4200."]


def _run(tmp_path, texts, name="out", **kw):
    corpus = tmp_path / f"{name}.jsonl"
    corpus.write_text("".join(json.dumps({"id": f"t{i}", "text": t}) + "\n" for i, t in enumerate(texts)))
    cfg = AnnotateConfig(corpus=str(corpus), out=str(tmp_path / name), tools=["Calculator"], shard_size=4,
                         tau_s=0.0, k=20, m=4, tau_f=0.0, prefilter=False, progress=False, **kw)
    Runner(cfg, lm=FakeLM(), tools=[calculator_tool()], executor=Executor(engine_factory=FakeEngine)).run()
    cands = [json.loads(line) for line in (tmp_path / name / "candidates.jsonl").read_text().splitlines()]
    cstar = [json.loads(line) for line in (tmp_path / name / "corpus.jsonl").read_text().splitlines()]
    return cands, cstar


def test_calls_only_between_words_and_c_star_strips_back_exactly(tmp_path):
    # tau_s 0 and k 20 make every token a candidate position: only the call-site rule can keep
    # calls out of "1050" (the fake model opens calls at every character).
    cands, cstar = _run(tmp_path, NUMBERS)
    assert cands and cstar
    for c in cands:
        text = NUMBERS[int(c["doc_id"][1:])]
        assert text[c["char_offset"]].isspace(), (text, c["char_offset"])  # never inside a word or number
        assert c["char_offset"] > 0
    for r in cstar:
        assert strip_calls(r["text"]) == r["original"]
        offsets = [c["char_offset"] for c in r["calls"]]
        assert len(offsets) == len(set(offsets))  # never two calls at one spot
        for parsed in find_calls(r["text"]):
            after = r["text"][parsed.end: parsed.end + 1]
            assert after.isspace(), r["text"]  # a call is followed by the space before its word


def test_no_call_at_the_first_word_of_a_document(tmp_path):
    cands, _ = _run(tmp_path, ["5 boxes of 6 eggs make 30 eggs."])
    assert cands and min(c["char_offset"] for c in cands) > 0


def test_windows_have_left_context_and_no_call_inside_it(tmp_path):
    words = lambda s: len(s.split())  # noqa: E731
    text = "Tom had 3 cats. Then he got 4 dogs. So he has 7 pets now. Later 2 more cats came. Now 9 pets live there."
    docs, split = windowed([Document("d", text)], 8, words, context_tokens=4)
    assert split == 1 and docs[0].context_chars == 0
    for d in docs[1:]:
        assert d.context_chars > 0 and text.find(d.text) >= 0
        assert words(d.text[: d.context_chars]) <= 4
    bodies = [d.text[d.context_chars:].strip() for d in docs]
    assert " ".join(bodies).split() == text.split()  # bodies tile the document exactly once

    cands, cstar = _run(tmp_path, [text], window_tokens=30, window_context=12)  # the fake counts characters
    rows = [json.loads(line) for line in (tmp_path / "out" / "documents.jsonl").read_text().splitlines()]
    ctx = {r["id"]: r.get("context_chars", 0) for r in rows}
    assert len(rows) > 2 and all(ctx[r["id"]] > 0 for r in rows[1:])
    assert any(ctx[c["doc_id"]] for c in cands)
    for c in cands:
        assert c["char_offset"] >= max(ctx[c["doc_id"]], 1)
    assert all(strip_calls(r["text"]) == r["original"] for r in cstar)


def test_call_sites_pure_cases():
    def sites(tokens, context=0):
        led = "".join(tokens)
        offs = [sum(map(len, tokens[:i])) for i in range(len(tokens))]
        return [t for t, ok in zip(tokens, call_sites(offs, led, context)) if ok]

    assert sites([" It", " costs", " $", "4", ",", "500", "."]) == [" costs", " $"]
    assert sites([" a", ".\n", "It", " is", "\n\n", "Now", " 5", "  "]) == [" is", "\n\n", " 5"]
    assert sites([" a", "  ", " b"]) == [" b"]  # the whitespace token before a space-led word is no site


# ---------------------------------------------------------------- real tokenizers
TOKENIZERS = ["smollm2-135m", "qwen2.5-coder-0.5b", "gemma3-270m"]


@pytest.fixture(scope="module", params=TOKENIZERS)
def tokenizer(request):
    from transformers import AutoTokenizer

    from toolformer_kit.lm.embedded import resolve_model

    return AutoTokenizer.from_pretrained(resolve_model(request.param))


def _sites(tok, text):
    from toolformer_kit.lm.base import encode_with_offsets

    ids, offs = encode_with_offsets(tok, LEAD + text)
    mask = call_sites(offs, LEAD + text)
    return ids, offs, [char_offset(o) for o, ok in zip(offs, mask) if ok]


@pytest.mark.real_model
def test_sites_on_the_embedded_tokenizers(tokenizer):
    for text in NUMBERS + ["Marie Curie (1867–1934) won two Nobel Prizes.", "Il a dit « bonjour » à 8 h."]:
        _, _, sites = _sites(tokenizer, text)
        assert len(sites) == len(set(sites))
        for s in sites:
            assert s > 0 and text[s].isspace() and text[s:].strip(), (text, s)  # at whitespace before a word
        # every space-separated word but the first gets a site: the space before it
        words = [i for i, ch in enumerate(text) if ch == " " and text[i + 1: i + 2].strip()]
        assert set(words) <= set(sites), (tokenizer.name_or_path, text, sorted(set(words) - set(sites)))


@pytest.mark.real_model
def test_the_text_is_tokenized_as_inside_a_demonstration(tokenizer):
    from toolformer_kit.tools import get_tool

    enc = lambda s: tokenizer.encode(s, add_special_tokens=False)  # noqa: E731
    for name in ("Calculator", "WikiSearch", "Calendar", "MT", "QA"):
        tool = get_tool(name)
        text = "The farm had 12 cows and bought 30 more."
        prefix, context = tool.prompt_prefix(), tool.prompt_context(text)
        # the prompt is encoded in two halves (the first is cached); together they must be the
        # tokens of the whole prompt, as every demonstration's "Input: x" is tokenized
        assert enc(prefix) + enc(context) == enc(prefix + context), name
        # and the re-written text after "Output:" (LEAD + text) continues it naturally
        whole = prefix + context
        assert enc(whole) + enc(LEAD + text) == enc(whole + LEAD + text), name
        # the text's first token is " The", as "The" is inside "Input: The …" of a demonstration
        assert enc(context)[0] == enc("Input: " + text)[len(enc("Input:"))]
        assert tokenizer.decode(enc(context)[:1]) == " The"


@pytest.mark.real_model
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.sampled_from(["The", "club", "has", "1050", "members,", "(12%)", "$4,500", "9.5", "é", "naïve",
                                 "—", "x=3+4", "2021;", "«", "»", "it's", "Ünïcode", "a"]), min_size=2, max_size=14),
       st.lists(st.sampled_from([" ", " ", " ", "\n", "\n\n", "  ", " \n"]), min_size=14, max_size=14),
       st.randoms(use_true_random=False))
def test_any_subset_of_sites_strips_back_exactly(tokenizer, words, seps, rnd):
    text = words[0] + "".join(s + w for s, w in zip(seps, words[1:]))
    _, _, sites = _sites(tokenizer, text)
    chosen = [s for s in sites if rnd.random() < 0.5]
    calls = [Candidate("d", "Calculator", 0, s, 0.5, "", input="1 + 1", result="2", kept=True) for s in chosen]
    annotated = annotate_text(text, calls)
    assert strip_calls(annotated) == text
    assert len(find_calls(annotated)) == len(chosen)


# ---------------------------------------------------------------- WikiSearch and the annotated document
def test_wikisearch_does_not_return_the_document_it_annotates(tmp_path):
    from toolformer_kit.annotate.stages import doc_tool
    from toolformer_kit.tools.wikisearch import wikisearch_tool

    corpus = tmp_path / "wiki.jsonl"
    articles = {"Asterix": "Asterix is a French comic album series about a village of Gauls who resist Rome.",
                "Obelix": "Obelix is a fictional character of the French comic series Asterix, a menhir carver.",
                "Rome": "Rome is the capital city of Italy and of the Lazio region."}
    corpus.write_text("".join(json.dumps({"title": t, "text": x}) + "\n" for t, x in articles.items()))
    tool = wikisearch_tool(corpus=str(corpus))
    tool.prepare()
    assert tool("Asterix French comic").startswith("Asterix is")  # the plain tool finds the article

    doc = Document("wiki:Asterix", articles["Asterix"] + " Many adventures take the hero abroad.", {"title": "Asterix"})
    own = doc_tool(tool, doc)
    assert own("Asterix French comic").startswith("Obelix is")  # its own article is skipped
    assert own.version != tool.version  # so the result cache cannot serve one for the other
    # a copy under another title (a window, a mixed-language text) is skipped by its words
    copy = Document("mt:x", "Intro. " + articles["Rome"], {"title": "Roma"})
    assert doc_tool(tool, copy)("Rome capital Italy") != tool("Rome capital Italy")
    assert doc_tool(tool, doc, exclude_self=False)("Asterix French comic").startswith("Asterix is")


def test_call_insert_and_strip_keep_other_whitespace():
    for text, pos in [("a\tb", 1), ("a \nb", 2), ("a  b", 2), ("end.\n\nNext", 4)]:
        out = annotate_text(text, [Candidate("d", "QA", 0, pos, 0.5, "", input="q", result="r", kept=True)])
        assert strip_calls(out) == text, (text, out)
