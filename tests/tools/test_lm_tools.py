"""QA and MT: prompt and answer handling with a scripted LM, then the real Qwen end to end."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from toolformer_kit.lm.base import Sample
from toolformer_kit.tools import PAPER_CALCULATOR_MT, PAPER_DEFAULT, get_tool
from toolformer_kit.tools.mt import LMTranslator, Seq2SeqTranslator, _default_translator, detect_language, mt_tool
from toolformer_kit.tools.qa import qa_tool
from toolformer_kit.tools.wikisearch import default_corpus, default_index


class ScriptedLM:
    """Replies with fixed lines and records each prompt and sampling config."""

    name = "scripted"

    def __init__(self, *replies):
        self.replies = list(replies)
        self.prompts, self.configs = [], []

    def sample(self, prefixes, n, stop="]", config=None):
        assert n == 1 and stop == "\n" and config.temperature == 0
        self.prompts += list(prefixes)
        self.configs.append(config)
        return [[Sample(self.replies.pop(0), True)] for _ in prefixes]


def test_lm_tools_are_lazy_and_have_paper_settings():
    qa, mt = get_tool("QA"), get_tool("MT")
    assert qa.settings == PAPER_DEFAULT and mt.settings == PAPER_CALCULATOR_MT
    assert "reader=qwen2.5-coder-0.5b" in qa.version and "translator=gemma3-270m" in mt.version


def test_a_tool_model_s_dtype_is_the_argument_then_the_environment_then_auto(monkeypatch):
    from toolformer_kit.config import ConfigError
    from toolformer_kit.tools import lmtool

    monkeypatch.delenv(lmtool.DTYPE_ENV, raising=False)
    assert lmtool.LazyLM().dtype == "auto" and "dtype=auto" in qa_tool().version
    monkeypatch.setenv(lmtool.DTYPE_ENV, "fp32")
    assert lmtool.LazyLM().dtype == "fp32" and lmtool.LazyLM(dtype="bf16").dtype == "bf16"
    assert "dtype=fp32" in qa_tool().version and "dtype=bf16" in qa_tool(dtype="bf16").version
    assert "dtype" not in qa_tool(lm=ScriptedLM()).version  # a given model is what it is
    monkeypatch.setenv(lmtool.DTYPE_ENV, "fp16")
    with pytest.raises(ConfigError, match="TOOLFORMER_TOOL_DTYPE"):
        lmtool.LazyLM().get()  # refused before any weights load


def test_looking_up_tools_loads_no_model_index_or_torch():
    code = ("import sys; from toolformer_kit.tools import get_tool, tool_names; "
            "[get_tool(n) for n in tool_names()]; "
            "print(sorted(m for m in ('torch', 'transformers', 'tantivy', 'py3langid') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_qa_prompt_holds_retrieved_passages_and_cleans_the_answer():
    lm = ScriptedLM(" Leonardo da Vinci.\n")
    tool = qa_tool(lm=lm)
    assert tool("Who painted the Mona Lisa?") == "Leonardo da Vinci"
    prompt = lm.prompts[0]
    assert prompt.rstrip().endswith("Question: Who painted the Mona Lisa?\nAnswer:")
    last_block = prompt.split("\n\n")[-1]
    assert "Mona Lisa: The Mona Lisa is a half-length portrait" in last_block
    assert lm.configs[0].max_new_tokens <= 16


@pytest.mark.parametrize("reply", [" unknown\n", "\n", " " + "word " * 20 + "\n"])
def test_qa_no_answer_is_no_result(reply):
    assert qa_tool(lm=ScriptedLM(reply))("Who painted the Mona Lisa?") is None


def test_qa_cuts_a_reader_that_runs_on_and_abstains_on_an_unsupported_span():
    assert qa_tool(lm=ScriptedLM(" Leonardo da Vinci.<|im_end|>Question\n"))("Who painted the Mona Lisa?") \
        == "Leonardo da Vinci"
    from toolformer_kit.tools.qa import Reading, judge

    chosen = [("Ulm", "Ulm is a city on the Danube."), ("Albert Einstein", "Albert Einstein was a physicist.")]
    reading = judge(Reading("Which river did Einstein swim in as a boy?", chosen), " the Danube")
    assert reading.answer is None and reading.why == "unsupported" and reading.support < 0.35


def test_qa_batch_answers_as_one_call_at_a_time_does():
    questions = ["Who painted the Mona Lisa?", "zzzz qqqq", "Who wrote Pride and Prejudice?", "Who built it?"]
    replies = [" Leonardo da Vinci.\n", " Jane Austen\n", " unknown\n"]
    one = qa_tool(lm=ScriptedLM(*replies))
    single = [one(q) for q in questions]
    lm = ScriptedLM(*replies)
    batched = qa_tool(lm=lm).run_many(questions)
    assert batched == single == ["Leonardo da Vinci", None, "Jane Austen", None]
    assert len(lm.prompts) == 3  # a question without retrieved sentences asks the reader nothing


class BestSentenceLM:
    """A reader that answers with the last word of the best sentence it is shown (the prompt's
    last passage line) that the question does not hold: the reply with the most support there
    is, so it passes the support check wherever any reply could."""

    name = "best-sentence"

    def __init__(self):
        self.prompts = []

    def sample(self, prefixes, n, stop="]", config=None, **_):
        self.prompts += list(prefixes)
        return [[Sample(" " + self._reply(p) + "\n", True)] for p in prefixes]

    @staticmethod
    def _reply(prompt):
        block = prompt.split("\n\n")[-1]
        question = block.split("Question: ")[-1].lower()
        best = [ln for ln in block.splitlines() if ln.startswith("(")][-1].split(": ", 1)[-1]
        words = [w.strip(".,;()\"'") for w in best.split()]
        return next((w for w in reversed(words) if w and w.lower() not in question), "unknown")


def test_the_reader_is_not_run_where_no_sentence_could_support_an_answer():
    """A question whose chosen sentences hold less than MIN_SUPPORT of its word weight gets no
    answer whatever the reader writes, so the reader skips it (40 % of a search campaign's QA
    questions): the answers are the same as reading every question, one by one or batched."""
    from toolformer_kit.tools.qa import QAReader, choose, corpus_idf, judge, reader_prompt

    questions = ["Who painted the Mona Lisa?", "Which opera did the Danube compose about volcanoes?",  # weak: 0.27
                 "Which emperor invented the saxophone in Antarctica?",  # 0.351: read
                 "How many penguins sang at the Olympic volcano festival?",  # weak: 0.251
                 "Which family has swallowtail butterflies?", "What did they migrate to?", "String"]
    index = default_index()
    every = []
    for q in questions:  # what reading every question that has sentences gives
        r = choose(q, index)
        every.append(judge(r, BestSentenceLM._reply(reader_prompt(q, list(reversed(r.chosen)))),
                           corpus_idf(index)).answer if r.chosen else None)
    lm = BestSentenceLM()
    batched = QAReader(lm=lm).answer_many(questions)
    single = [QAReader(lm=BestSentenceLM()).answer(q) for q in questions]
    assert batched == single == every
    assert any(every) and len(lm.prompts) < sum(bool(choose(q, index).chosen) for q in questions)


def test_qa_trace_scores_the_reader_s_confidence_in_a_grounded_span():
    """issue 40, item 3: the margin of the span's first token over " unknown"'s is recorded for
    every grounded span (the signal a later abstention rule is tuned on), and for nothing else."""
    from toolformer_kit.tools.qa import QAReader

    class Scoring(ScriptedLM):
        def token_logprobs(self, prefixes, continuations):
            self.scored = list(zip(prefixes, continuations))
            return [[-0.5, -1.0] if c != " unknown" else [-2.5] for c in continuations]

    lm = Scoring(" Leonardo da Vinci.\n", " Picasso\n")
    traces = QAReader(lm=lm).trace_many(["Who painted the Mona Lisa?", "Who wrote Pride and Prejudice?"])
    assert traces[0]["span"] == "Leonardo da Vinci" and traces[0]["margin"] == 2.0
    assert traces[1]["why"] == "not grounded" and traces[1]["margin"] is None
    assert [c for _, c in lm.scored] == [" Leonardo da Vinci", " unknown"]
    assert lm.scored[0][0] == lm.prompts[0]  # scored after the very prompt the reader answered


def test_mt_detects_language_and_skips_english():
    lm = ScriptedLM(" The library opens at nine.\n")
    tool = mt_tool(lm=lm)
    assert tool("The library opens at nine.") is None and lm.prompts == []  # English: no LM call
    assert tool("Die Bibliothek öffnet um neun.") == "The library opens at nine."
    assert lm.prompts[0].endswith("German: Die Bibliothek öffnet um neun.\nEnglish:")
    assert tool("12345 678") is None  # no words, no language


def test_mt_batch_translates_as_one_call_at_a_time_does():
    texts = ["Die Bibliothek öffnet um neun.", "The library opens at nine.", "Le musée ouvre à dix.", "12345 678"]
    replies = [" The library opens at nine.\n", " The museum opens at ten.\n"]
    one = mt_tool(lm=ScriptedLM(*replies))
    single = [one(t) for t in texts]
    lm = ScriptedLM(*replies)
    tool = mt_tool(lm=lm)
    assert tool.batch_fn is not None and tool.run_many(texts) == single
    assert single == ["The library opens at nine.", None, "The museum opens at ten.", None]
    assert len(lm.prompts) == 2  # English and no-language inputs ask the translator nothing


def test_mt_echo_is_not_a_translation():
    assert mt_tool(lm=ScriptedLM(" Wunderbar\n"))("Wunderbar") is None


@pytest.mark.parametrize("text, lang", [
    ("Der Hund schläft unter dem Tisch.", "de"), ("Le chat dort sur le canapé.", "fr"),
    ("El perro come en la cocina.", "es"), ("Il treno parte alle otto.", "it"),
    ("Сегодня в Москве идёт сильный снег.", "ru"), ("猫在沙发上睡觉。", "zh"), ("The cat sleeps on the sofa.", "en"),
])
def test_language_id(text, lang):
    assert detect_language(text)[0] == lang


@pytest.mark.real_model  # borrows the embedded SmolLM2's tokenizer (pulled on first use)
def test_seq2seq_folder_code_path(tmp_path):
    """A (tiny, randomly initialised) Marian folder goes through the transformers translator."""
    from transformers import AutoTokenizer, MarianConfig, MarianMTModel

    from toolformer_kit.lm.embedded import resolve_model

    tok = AutoTokenizer.from_pretrained(resolve_model("smollm2-135m"))
    eos = tok.eos_token_id
    cfg = MarianConfig(vocab_size=len(tok), d_model=16, encoder_layers=1, decoder_layers=1,
                       encoder_attention_heads=2, decoder_attention_heads=2, encoder_ffn_dim=32,
                       decoder_ffn_dim=32, max_position_embeddings=128, pad_token_id=eos, eos_token_id=eos,
                       decoder_start_token_id=eos)
    MarianMTModel(cfg).save_pretrained(tmp_path)
    tok.save_pretrained(tmp_path)
    assert isinstance(_default_translator(str(tmp_path)), Seq2SeqTranslator)
    assert isinstance(_default_translator(None), LMTranslator)
    tool = mt_tool(translator=Seq2SeqTranslator(tmp_path, max_new_tokens=6))
    out = tool("Ich habe heute keine Zeit.")
    assert out is None or (isinstance(out, str) and "\n" not in out)
    assert tool("I have no time today.") is None
    with pytest.raises(ValueError, match="no config.json"):
        Seq2SeqTranslator(tmp_path / "nowhere")


# ------------------------------------------------------------------ the real backends
@pytest.mark.real_model
def test_qa_answers_from_a_retrieved_passage(qwen):
    tool = qa_tool(lm=qwen)
    answer = tool("Who painted the Mona Lisa?")
    assert answer and "Leonardo" in answer
    passages = " ".join(h.text for h in default_index().search("Who painted the Mona Lisa?", 2))
    assert answer in passages  # a span of what was retrieved, not free recall
    with open(default_corpus(), encoding="utf-8") as fh:
        summaries = {v["title"]: v["extract"] for v in json.load(fh).values()}
    assert answer in summaries["Mona Lisa"]


@pytest.mark.real_model
def test_qa_batch_on_qwen_runs_the_reader_head_once_and_agrees(qwen):
    from toolformer_kit.tools.lmtool import split_shared
    from toolformer_kit.tools.qa import reader_head, reader_prompt

    tool = qa_tool(lm=qwen)
    questions = ["Who painted the Mona Lisa?", "Who wrote Pride and Prejudice?", "What is the capital of Kenya?"]
    assert tool.run_many(questions) == [tool(q) for q in questions]
    shared, tails = split_shared(qwen, [reader_prompt(questions[0], [("A", "b.")])], reader_head())
    assert shared == reader_head() and tails[0].startswith("Passages:")


@pytest.mark.real_model
@pytest.mark.parametrize("text, lang, words", [
    ("Ich habe heute keine Zeit.", "de", ("time", "today")),
    ("Le musée est fermé le lundi.", "fr", ("museum", "closed", "monday")),
])
def test_mt_translates_into_english(qwen, text, lang, words):
    assert detect_language(text)[0] == lang
    out = mt_tool(lm=qwen)(text)
    assert out and all(w in out.lower() for w in words), out
    assert detect_language(out)[0] == "en"


def _summary(title: str) -> str:
    from toolformer_kit.tools.wikisearch import read_corpus

    return next(text for t, text in read_corpus(default_corpus()) if t == title)


def test_qa_never_reads_the_document_being_annotated_on_the_real_index():
    """Issue 40: QA searches the index that holds the summary being annotated; while that summary
    is annotated it must not read it (as WikiSearch), else its calls copy the text back."""
    from toolformer_kit.annotate.document import Document
    from toolformer_kit.annotate.stages import doc_tool

    text = _summary("Mona Lisa")
    lm = ScriptedLM(" Leonardo da Vinci.\n", " Leonardo da Vinci.\n")
    tool = qa_tool(lm=lm)
    assert tool("Who painted the Mona Lisa?") == "Leonardo da Vinci"  # the plain tool reads the summary
    assert "The Mona Lisa is a half-length portrait" in lm.prompts[0]
    runner = doc_tool(tool, Document("wiki:Mona Lisa", text, {"title": "Mona Lisa"}))
    assert runner.version.startswith(tool.version + "|not:")  # its own cache key
    runner("Who painted the Mona Lisa?")
    assert "The Mona Lisa is a half-length portrait" not in lm.prompts[1]
    assert "Mona Lisa:" not in lm.prompts[1].split("Passages:")[-1]  # nor any passage titled so
    # a copy of the text under another title is dropped too (8 words in common)
    other = doc_tool(tool, Document("x", text, {}))
    hits = other.fn.__self__.index().search("Mona Lisa half-length portrait Leonardo", 3)
    assert hits and all("The Mona Lisa is a half-length portrait" not in h.text for h in hits)


def test_every_tool_that_searches_a_corpus_excludes_the_document_and_others_are_unchanged():
    from toolformer_kit.tools.wikisearch import excluding_document

    text = _summary("Mona Lisa")
    for name in ("WikiSearch", "QA"):
        assert get_tool(name).exclude is not None, name
        assert "|not:" in excluding_document(get_tool(name), text, "Mona Lisa").version
    for name in ("Calculator", "MT"):
        assert excluding_document(get_tool(name), text) is get_tool(name)


def test_a_user_tool_over_its_own_corpus_declares_its_exclusion():
    from toolformer_kit.annotate.document import Document
    from toolformer_kit.annotate.stages import doc_tool
    from toolformer_kit.tools.user import make_tool

    corpus = ["The river Lune flows through Lancaster.", "Ulm lies on the Danube."]

    def lookup(text: str) -> str:
        "Finds a line of the corpus."
        return next((c for c in corpus if text in c), "")

    def exclude(doc_text: str, title: str):
        return (lambda q: next((c for c in corpus if q in c and c != doc_text), ""), None, "doc")

    tool = make_tool(lookup, "Lookup", demonstrations=["It is on [Lookup(Danube)] the Danube."], exclude=exclude)
    assert tool("Lune") == corpus[0]
    assert doc_tool(tool, Document("d", corpus[0]))("Lune") is None


@pytest.mark.real_model
def test_default_mt_translates_hindi_arabic_chinese_and_returns_no_worked_example_for_anything():
    """Issue 47: the default translator (Gemma 3 270M, chosen by chrF over MLQA) on MLQA-style
    questions in three scripts, and on runes and random letters, which are no language."""
    from toolformer_kit.tools.mt import DEFAULT_TRANSLATOR, is_worked_example

    tool = mt_tool()
    assert f"translator={DEFAULT_TRANSLATOR}" in tool.version
    for text in ("जोश नॉर्मन ने कितने बॉल को इंटरसेप्ट किया?", "من قاد الفهود في الإقالات؟", "谁带领黑豹队擒杀四分卫？"):
        out = tool(text)
        assert out and not is_worked_example(out) and detect_language(out)[0] == "en", (text, out)
    assert tool("ᚠᛇᚻ᛫ᛒᛦᚦ᛫ᚠᚱᚩᚠᚢᚱ") is None and tool("xqzv brrrpt klmnq wxyz") is None
    quotes = ["El reggae es un género musical originado en Jamaica.", "Le musée est fermé le lundi.",
              "Die Stadt liegt am Rhein.", "The museum is closed."]
    assert tool.run_many(quotes) == [tool(q) for q in quotes]  # the batch path, as the campaign's engine runs it
