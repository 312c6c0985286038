"""QA: a short answer to a factoid question, read from retrieved Wikipedia passages.

The paper used Atlas, a retrieval-augmented reader fine-tuned on Natural Questions. We build the
same shape from parts we have offline: the WikiSearch BM25 index finds the top passages, and a
language model, shown a few worked (passages, question, answer) examples, copies the answer span.
The default reader is the embedded Qwen2.5-Coder 0.5B; pass ``model=``/``lm=`` to
:func:`qa_tool` or set ``$TOOLFORMER_QA_MODEL`` to use another.

Measured with the embedded Qwen on ten factoid questions about vital articles: 8/10 right with the
top 2 passages (≤ 600 characters each, best last) — and also with the single best full passage —
at 2–4 s per question on 2 CPU cores. The misses: BM25 ranked the wrong article first ("largest
planet") or a neighbouring article misled the reader ("when did World War II end").

The reader is told to answer "unknown" when the passages do not say; that, an empty line, or an
answer longer than :data:`MAX_ANSWER_WORDS` words, is "no result" rather than a guess.

**Answering from the right passage** (issue 28, item 3; ``retrieval="sentences"``, the default).
Measured on held-out NQ questions the passage reader was right 0 times in 30: the top two passages
are long, often about a neighbouring article, and a small reader copies a plausible name from the
wrong one or from its own memory. So: the top :data:`SENTENCE_PASSAGES` passages are cut into
sentences, the :data:`SENTENCES` that hold the most question-word weight (idf over the corpus,
:func:`corpus_idf`; a word only in the article's title counts half, as sentences often say "He" or
"It") are what the reader reads, and the reader **abstains** (:func:`judge`) unless its answer

* is a span of those sentences that holds a word the question does not (:func:`grounded`): an
  answer it did not read, or one that only repeats the question, is no result; and
* stands in a sentence that holds at least :data:`MIN_SUPPORT` of the question's word weight
  (:func:`support`): where the passages do not say, the reader still finds some span in a
  sentence about something else.

``retrieval="passages"`` keeps the reader above, for comparison (``benchmarks/qa_tool_check.py``
measures both). Where the retrievable questions were lost before these checks (the first 20 + 10
items per task of ``qa_tool_check``, 100 retrievable): 47 of 59 abstentions were replies that
failed the span check, 18 of them holding the gold, often because the reader ran on past it
("Tunisia.<|im_end|>", "161. The dynasty …"; now cut at the first sentence, :func:`clean_answer`:
+8 right); the gold was in the chosen sentences for 80 of them (4 by shared-word count; 5 by
idf weight: 89). The support check
took the wrong answers where abstaining is right from 25 % to 10 % on those items at a cost of
~4 points right; its threshold and the 5 sentences were tuned there, and
``results/search/qa-tool`` reports the next 20 + 10 items per task, never looked at.

>>> print(reader_prompt("Who built it?", [("Tower", "Gustave Eiffel built the tower.")]).split("\\n\\n")[-1])
Passages:
(1) Tower: Gustave Eiffel built the tower.
Question: Who built it?
Answer:
>>> clean_answer("Leonardo da Vinci."), clean_answer("unknown"), clean_answer("")
('Leonardo da Vinci', None, None)
"""

from __future__ import annotations

import copy
import math
import re
from collections import Counter
from dataclasses import dataclass
from typing import Callable, Mapping, Optional, Sequence

from ..calls import ToolCall, format_call
from ..config import ConfigError
from ..lm.base import LanguageModel
from .base import PAPER_DEFAULT, Tool
from .lmtool import LazyLM
from .wikisearch import SKIP_SLACK, BM25Index, Hit, NotTheDocument, default_index, read_corpus, sentences, snippet

MODEL_ENV = "TOOLFORMER_QA_MODEL"
MAX_ANSWER_WORDS = 12
PASSAGES = 2
PASSAGE_CHARS = 600
SENTENCE_PASSAGES = 3  # as the retrieval ceiling's top 3 (measures.ceiling.TOP)
SENTENCES = 5
TITLE_WEIGHT = 0.5  # a question word only in a sentence's article title counts half
# In the tool's version (the engine's cache key, and each campaign shard's record): bump when the
# prompt or the checks change. 3: annotation never reads the document being annotated (issue 40).
READER_REVISION = 3
MIN_SUPPORT = 0.35  # share of the question's word weight the answer's sentence must hold (support())
RETRIEVALS = ("sentences", "passages")
SEARCHES = ("bm25", "dense", "hybrid")  # which passages: see tools/dense.py
STOPWORDS = frozenset(
    "a an the of in on at to for from by with and or is are was were be been being it its this that these those "
    "what which who whom whose when where why how did do does has have had as into than then there their his her "
    "he she they them we you i not no name named called first last most many much one also".split())
_WORD = re.compile(r"\w+")
_ANSWER_NORM = re.compile(r"[^\w]+")

READER_INSTRUCTION = (
    "Answer each question, or complete each statement, with the shortest phrase copied from the "
    "passages. If the passages do not say, write: unknown"
)

# Worked examples for the reader, written for this project; the facts are in the passages. The one
# "unknown" comes first: a small reader copies the form of the example next to the question, and
# the grounding and support checks (judge) are the main abstention rule. One input is a statement
# to complete, as LAMA and cloze items are.
READER_EXAMPLES = [
    ([("Saturn", "Saturn is the sixth planet from the Sun and has a prominent ring system.")],
     "Who was the first person on Mars?", "unknown"),
    ([("Danube", "The Danube is the second-longest river in Europe. It rises in the Black Forest in "
                  "Germany and flows into the Black Sea."),
      ("Rhine", "The Rhine begins in the Swiss Alps and flows to the North Sea.")],
     "Where does the Danube end?", "the Black Sea"),
    ([("Radio", "Guglielmo Marconi sent radio signals across the Atlantic in 1901."),
      ("Telephone", "Alexander Graham Bell was granted the first US patent for the telephone in 1876.")],
     "In what year was the telephone patented?", "1876"),
    ([("Serengeti", "The Serengeti is a savanna ecosystem in East Africa."),
      ("Mount Kilimanjaro", "Mount Kilimanjaro is a dormant volcano in Tanzania. It is the highest "
                            "mountain in Africa.")],
     "Kilimanjaro, the highest mountain of its continent, is a dormant volcano in", "Tanzania"),
    ([("Starry Night", "The Starry Night is an oil-on-canvas painting by the Dutch painter Vincent van Gogh, "
                       "painted in June 1889.")],
     "what kind of painting is the starry night?", "oil-on-canvas"),
]


def _passage_block(passages: Sequence[tuple[str, str]]) -> str:
    return "\n".join(f"({i}) {title}: {text}" for i, (title, text) in enumerate(passages, 1))


def _reader_block(passages: Sequence[tuple[str, str]], question: str, answer: str = "") -> str:
    block = f"Passages:\n{_passage_block(passages)}\nQuestion: {question}\nAnswer:"
    return block + (f" {answer}" if answer else "")


def reader_head() -> str:
    """What every reader prompt starts with: the instruction and the worked examples (run once
    per batch of questions)."""
    return "\n\n".join([READER_INSTRUCTION] + [_reader_block(*ex) for ex in READER_EXAMPLES]) + "\n\n"


def reader_prompt(question: str, passages: Sequence[tuple[str, str]]) -> str:
    """Instruction, worked examples, then the retrieved passages and the question."""
    return reader_head() + _reader_block(passages, question)


def clean_answer(text: str) -> Optional[str]:
    """The answer span, or None for "unknown", nothing, or a rambling sentence. A reader that runs
    on past its answer (an end-of-turn token, a second sentence) is cut back to the first sentence.

    >>> clean_answer("Tunisia.<|im_end|>"), clean_answer("161. The dynasty comprised seven emperors")
    ('Tunisia', '161')
    """
    text = re.sub(r"\s+", " ", text.split("<|", 1)[0]).strip()
    answer = (sentences(text) or [""])[0].strip().strip("\"'").rstrip(".").strip()
    if not answer or answer.lower().startswith("unknown") or len(answer.split()) > MAX_ANSWER_WORDS:
        return None
    return answer


def answer_question(question: str, reader: LazyLM, index: BM25Index, k: int = PASSAGES,
                    max_new_tokens: int = 16) -> Optional[str]:
    """Retrieve ``k`` passages for the question and let the reader pick the answer span."""
    hits = index.search(question, k)
    if not hits:
        return None
    # Best passage last, next to the question: a small reader leans on what it read most recently.
    passages = [(h.title, snippet(h.text, max_sentences=8, max_chars=PASSAGE_CHARS)) for h in reversed(hits)]
    return clean_answer(reader.complete(reader_prompt(question, passages), max_new_tokens))


def content_words(text: str) -> set[str]:
    """Lower-cased words that carry meaning, each cut to its first 6 letters (a crude stem:
    "painted"/"painter"/"painting" meet).

    >>> sorted(content_words("Who painted the Mona Lisa?"))
    ['lisa', 'mona', 'painte']
    """
    return {w[:6] for w in _WORD.findall(text.lower()) if w not in STOPWORDS and len(w) > 1}


Weight = Callable[[str], float]


def idf_weight(doc_freq: Mapping[str, int], n_docs: int) -> Weight:
    """A content word's weight: its inverse document frequency in the corpus, so that a shared
    rare word (a name) counts for more than a shared common one ("country"); an unseen word
    weighs most.

    >>> w = idf_weight({"danube": 3, "river": 400}, 10_000)
    >>> w("danube") > w("river") > 0, w("zzz") > w("danube")
    (True, True)
    """
    return lambda word: math.log((n_docs + 1) / (doc_freq.get(word, 0) + 0.5))


_IDF: dict[str, Weight] = {}


def corpus_idf(index: BM25Index) -> Weight:
    """:func:`idf_weight` over the articles of ``index``'s corpus, counted once per corpus file per
    process (~2 s for the 10,033 summaries)."""
    key = str(index.corpus)
    if key not in _IDF:
        doc_freq: Counter[str] = Counter()
        n_docs = 0
        for title, text in read_corpus(index.corpus):
            n_docs += 1
            doc_freq.update(content_words(f"{title} {text}"))
        _IDF[key] = idf_weight(doc_freq, n_docs)
    return _IDF[key]


def _overlap(want: set[str], words: set[str], title: set[str], weight: Weight | None) -> float:
    """Weight of the question words a sentence holds, plus :data:`TITLE_WEIGHT` of those only its
    article's title holds (the sentence may say "He" or "It")."""
    w = weight or (lambda _: 1.0)
    return sum(w(x) for x in want & words) + TITLE_WEIGHT * sum(w(x) for x in (want & title) - words)


def rank_sentences(question: str, hits: Sequence[Hit], top: int = SENTENCES,
                   weight: Weight | None = None) -> list[tuple[str, str]]:
    """The ``top`` (title, sentence) pairs of ``hits`` that hold the most question-word weight
    (``weight``, e.g. :func:`corpus_idf`; default: each word 1), best first; a word in the
    article's title only counts half, and ties go to the better passage, then the earlier sentence.
    Sentences sharing no word are never chosen.

    >>> hits = [Hit("Ulm", "Ulm is a city on the Danube. It has a tall minster.", 2.0),
    ...         Hit("Albert Einstein", "Albert Einstein was a physicist. He was born in Ulm.", 1.0)]
    >>> rank_sentences("Where was Einstein born?", hits, 2)
    [('Albert Einstein', 'He was born in Ulm.'), ('Albert Einstein', 'Albert Einstein was a physicist.')]
    """
    want = content_words(question)
    scored = []
    for rank, hit in enumerate(hits):
        title = content_words(hit.title)
        for j, sent in enumerate(sentences(" ".join(hit.text.split()))):
            score = _overlap(want, content_words(sent), title, weight)
            if score > 0:
                scored.append((-score, rank, j, hit.title, sent))
    return [(title, sent) for *_, title, sent in sorted(scored)[:top]]


def support(answer: str, chosen: Sequence[tuple[str, str]], question: str, weight: Weight | None = None) -> float:
    """The share of the question's word weight that the best sentence holding ``answer`` (with its
    title) covers. Why: where the passages do not say, the reader still finds some span in a
    sentence about something else; a sentence that states the answer shares most of the question.

    >>> chosen = [("Albert Einstein", "He was born in Ulm."), ("Ulm", "Ulm is a city on the Danube.")]
    >>> support("Ulm", chosen, "Where was Einstein born?"), support("the Danube", chosen, "Where was Einstein born?")
    (0.75, 0.0)
    """
    return _best_share(question, [(t, s) for t, s in chosen if _norm(answer) in _norm(s)], weight)


def _best_share(question: str, chosen: Sequence[tuple[str, str]], weight: Weight | None) -> float:
    """The share of the question's word weight that the best of ``chosen`` (with its title) holds."""
    want = content_words(question)
    total = _overlap(want, want, set(), weight)
    held = [_overlap(want, content_words(s), content_words(t), weight) for t, s in chosen]
    return max(held, default=0.0) / total if total else 0.0


def _norm(text: str) -> str:
    return " " + _ANSWER_NORM.sub(" ", text.lower()).strip() + " "


def grounded(answer: Optional[str], context: Sequence[str], question: str) -> Optional[str]:
    """``answer`` if it is a span of the context (whole words, case and punctuation aside) and holds
    a content word the question does not (whole words: "Germany" is news to "western German"); else
    None (the reader abstains).

    >>> grounded("Ulm", ["He was born in Ulm."], "Where was Einstein born?")
    'Ulm'
    >>> grounded("Munich", ["He was born in Ulm."], "Where was Einstein born?") is None  # not read
    True
    >>> grounded("Einstein", ["Einstein was born in Ulm."], "Where was Einstein born?") is None  # only the question
    True
    """
    if not answer:
        return None
    text = _norm(" ".join(context))
    if _norm(answer) not in text or not (_plain_words(answer) - _plain_words(question)):
        return None
    return answer


def _plain_words(text: str) -> set[str]:
    return {w for w in _WORD.findall(text.lower()) if w not in STOPWORDS}


@dataclass
class Reading:
    """One question's trip through the sentence reader, kept for diagnosis (``qa_tool_check``
    logs it): what the reader read, what it wrote, and why that was or was not the answer."""

    question: str
    chosen: list[tuple[str, str]]
    raw: Optional[str] = None
    answer: Optional[str] = None
    why: str = "no sentence"  # no sentence | weak sentences | unknown | not grounded | unsupported | answered
    support: Optional[float] = None
    margin: Optional[float] = None  # see :func:`margin`; scored for grounded spans only
    span: Optional[str] = None  # the grounded span, kept or not

    def trace(self) -> dict:
        return {"answer": self.answer, "raw": self.raw, "why": self.why, "support": self.support,
                "margin": self.margin, "span": self.span, "sentences": [f"{t}: {s}" for t, s in self.chosen]}


def best_support(reading: Reading, weight: Weight | None = None) -> float:
    """The most :func:`support` (rounded as :func:`judge` rounds it) that any reply could get from
    the reading's sentences: the share of the question's word weight that the best of them holds.
    Why: below :data:`MIN_SUPPORT` no reply passes :func:`judge`, so the reader need not run, and
    the answers stay the same (about 40 % of a search campaign's QA questions, measured on the
    first search bank's shards 200–267: 482 of 1,208 read).

    >>> best_support(Reading("Where was Einstein born?", [("Ulm", "Ulm is a city on the Danube.")]))
    0.0
    """
    return round(_best_share(reading.question, reading.chosen, weight), 3)


def judge(reading: Reading, raw: str, weight: Weight | None = None, min_support: float = MIN_SUPPORT) -> Reading:
    """Fill in the reader's reply ``raw``: the answer if it is clean, :func:`grounded` and its
    sentence has :func:`support` ≥ ``min_support``; else None and why not.

    >>> r = judge(Reading("Where was Einstein born?", [("Albert Einstein", "He was born in Ulm.")]), " Ulm.")
    >>> r.answer, r.why, r.support
    ('Ulm', 'answered', 0.75)
    """
    reading.raw = raw
    cleaned = clean_answer(raw)
    span = grounded(cleaned, [s for _, s in reading.chosen], reading.question)
    reading.span = span
    if span:
        reading.support = round(support(span, reading.chosen, reading.question, weight), 3)
    reading.answer = span if span and reading.support >= min_support else None
    reading.why = ("answered" if reading.answer else "unsupported" if span else
                   "unknown" if cleaned is None else "not grounded")
    return reading


def choose(question: str, index: BM25Index, k: int = SENTENCE_PASSAGES, top: int = SENTENCES) -> Reading:
    """The question with its ``top`` sentences from the top ``k`` passages, ranked by idf weight."""
    return Reading(question, rank_sentences(question, index.search(question, k), top, corpus_idf(index)))


def score_margins(readings: Sequence[Reading], prompts: Sequence[str], reader: LazyLM) -> None:
    """Fill in :attr:`Reading.margin` for the readings with a grounded span: log p of the span's
    first token minus log p of " unknown"'s, right after "Answer:". Why the first token: that is
    where the reader chooses between answering and abstaining; a sum over tokens would punish long
    names. One pass over each prompt, the reader's head run once."""
    todo = [(r, p) for r, p in zip(readings, prompts) if r.span]
    rows = reader.first_token_logprobs([p for _, p in todo], [(f" {r.span}", " unknown") for r, _ in todo],
                                       shared=reader_head())
    for (r, _), (answer, unknown) in zip(todo, rows or []):  # None: a reader that only writes
        r.margin = round(answer - unknown, 3)


def read_many(questions: Sequence[str], reader: LazyLM, index: BM25Index, k: int = SENTENCE_PASSAGES,
              top: int = SENTENCES, max_new_tokens: int = 16, score: bool = False,
              skip_weak: bool = True) -> list[Reading]:
    """Sentence-level retrieval over the top ``k`` passages of each question, the reader run once
    over all questions whose sentences could support an answer (:func:`best_support`; with
    ``skip_weak`` False, over every question that has sentences: the same answers, for diagnosis
    and ``benchmarks/bench_qa_batch.py --compare-skip``), best sentence last, each reply judged;
    with ``score`` each grounded span's :func:`margin` as well (one more pass; for diagnosis)."""
    readings = [choose(q, index, k, top) for q in questions]
    weight = corpus_idf(index)
    asked = []
    for r in readings:
        if r.chosen and skip_weak and best_support(r, weight) < MIN_SUPPORT:
            r.why = "weak sentences"
        elif r.chosen:
            asked.append(r)
    prompts = [reader_prompt(r.question, list(reversed(r.chosen))) for r in asked]
    for reading, raw in zip(asked, reader.complete_many(prompts, max_new_tokens, shared=reader_head())):
        judge(reading, raw, weight)
    if score:
        score_margins(asked, prompts, reader)
    return readings


def answer_from_sentences(question: str, reader: LazyLM, index: BM25Index, k: int = SENTENCE_PASSAGES,
                          top: int = SENTENCES, max_new_tokens: int = 16) -> Optional[str]:
    """Sentence-level retrieval over the top ``k`` passages, the reader on the ``top`` best
    sentences (best last), and its answer kept only if :func:`judge` finds it grounded and supported."""
    reading, weight = choose(question, index, k, top), corpus_idf(index)
    if not reading.chosen or best_support(reading, weight) < MIN_SUPPORT:
        return None
    raw = reader.complete(reader_prompt(question, list(reversed(reading.chosen))), max_new_tokens)
    return judge(reading, raw, weight).answer


def answer_many_from_sentences(questions: Sequence[str], reader: LazyLM, index: BM25Index,
                               k: int = SENTENCE_PASSAGES, top: int = SENTENCES,
                               max_new_tokens: int = 16) -> list[Optional[str]]:
    """:func:`answer_from_sentences` for many questions, the reader run once over all of them."""
    return [r.answer for r in read_many(questions, reader, index, k, top, max_new_tokens)]


def answer_many(questions: Sequence[str], reader: LazyLM, index: BM25Index, k: int = PASSAGES,
                max_new_tokens: int = 16) -> list[Optional[str]]:
    """:func:`answer_question` for many questions, the reader run once over all of them."""
    hits = [index.search(q, k) for q in questions]
    asked = [i for i, h in enumerate(hits) if h]
    prompts = [reader_prompt(questions[i], [(h.title, snippet(h.text, max_sentences=8, max_chars=PASSAGE_CHARS))
                                            for h in reversed(hits[i])]) for i in asked]
    replies = dict(zip(asked, reader.complete_many(prompts, max_new_tokens, shared=reader_head())))
    return [clean_answer(replies[i]) if i in replies else None for i in range(len(questions))]


def _demo(before: str, question: str, after: str) -> tuple[str, str]:
    return before + after, before + format_call(ToolCall("QA", question)) + after


INSTRUCTION = (
    "Your task is to add calls to a Question Answering API to a piece of text. A call looks like "
    "[QA(question)], and the question should ask for the fact that comes next in the text. Put "
    "a call just before that fact. Here are some examples:"
)

DEMONSTRATIONS = [
    _demo("The Eiffel Tower was designed by the engineering firm of", "Whose firm designed the Eiffel Tower?",
          " Gustave Eiffel."),
    _demo("Penicillin was discovered in 1928 by", "Who discovered penicillin?",
          " Alexander Fleming, a Scottish physician."),
    _demo("Canberra, and not Sydney, is the capital of", "Which country has Canberra as its capital?",
          " Australia."),
    _demo("The novel Pride and Prejudice was written by", "Who wrote Pride and Prejudice?",
          " Jane Austen and published in 1813."),
    _demo("Water boils at", "At what temperature does water boil at sea level?",
          " 100 degrees Celsius at sea level."),
]


class WithoutDocument:
    """An index seen without one document: ``search`` looks past the hits ``skip`` drops (the text
    being annotated, :class:`~.wikisearch.NotTheDocument`), as WikiSearch does; everything else is
    the index's own. Why: the QA tool reads the same summaries WikiSearch searches, and without
    this it answers from the very text it is annotating (832 of 869 QA results of the first
    search C* were copied from it)."""

    def __init__(self, index: BM25Index, skip: NotTheDocument):
        self._index, self.skip = index, skip

    def search(self, query: str, k: int) -> list[Hit]:
        return [h for h in self._index.search(query, k + SKIP_SLACK) if not self.skip(h)][:k]

    def __getattr__(self, name):
        return getattr(self._index, name)


class QAReader:
    """The QA tool's retrieval and reader, without the Tool around it: ``answer``, ``answer_many``
    and ``trace_many`` (the answer with what was read and written, for ``qa_tool_check``)."""

    def __init__(self, model: str | None = None, lm: LanguageModel | None = None, corpus: str | None = None,
                 k: int | None = None, retrieval: str = "sentences", top: int = SENTENCES,
                 dtype: str | None = None, search: str = "bm25"):
        if retrieval not in RETRIEVALS:
            raise ConfigError(f"unknown QA retrieval {retrieval!r}; use one of {', '.join(RETRIEVALS)}")
        self.sentence_level = retrieval == "sentences"
        self.k = k or (SENTENCE_PASSAGES if self.sentence_level else PASSAGES)
        self.reader = LazyLM(model, MODEL_ENV, lm, dtype)
        self.corpus = corpus
        self.top = top
        if search not in SEARCHES:
            raise ConfigError(f"unknown QA search {search!r}; use one of {', '.join(SEARCHES)}")
        self.search = search
        self._index: Optional[BM25Index] = None

    def index(self) -> BM25Index:
        """The passages' index: BM25, or a :class:`~.dense.Retriever` (dense or hybrid) over it."""
        if self._index is None:
            bm25 = BM25Index(self.corpus) if self.corpus else default_index()
            if self.search == "bm25":
                self._index = bm25
            else:
                from .dense import Retriever  # lazy: numpy vectors and the embedder only when asked

                self._index = Retriever(bm25, self.search)
        return self._index

    @property
    def search_version(self) -> str:
        """"" for BM25 (the versions, and the cache, of earlier runs stay valid), else the retrieval's."""
        if self.search == "bm25":
            return ""
        from .dense import Retriever

        return f"|search={Retriever.describe(self.search)}"

    def excluding(self, text: str, title: str = "") -> "QAReader":
        """This reader (the same model and index) over its corpus without the document ``text``."""
        skip = NotTheDocument(text, title)
        other = copy.copy(self)
        other.index = lambda: WithoutDocument(QAReader.index(self), skip)
        other.skip_key = skip.key()
        return other

    def prepare(self) -> None:
        self.index().index()
        self.reader.get()

    def answer(self, question: str) -> Optional[str]:
        if self.sentence_level:
            return answer_from_sentences(question, self.reader, self.index(), self.k, self.top)
        return answer_question(question, self.reader, self.index(), self.k)

    def answer_many(self, questions: Sequence[str]) -> list[Optional[str]]:
        if self.sentence_level:
            return answer_many_from_sentences(questions, self.reader, self.index(), self.k, self.top)
        return answer_many(questions, self.reader, self.index(), self.k)

    def trace_many(self, questions: Sequence[str]) -> list[dict]:
        if not self.sentence_level:
            return [{"answer": a} for a in self.answer_many(questions)]
        return [r.trace() for r in read_many(questions, self.reader, self.index(), self.k, self.top, score=True,
                                                skip_weak=False)]


def qa_tool(model: str | None = None, lm: LanguageModel | None = None, corpus: str | None = None,
            k: int | None = None, name: str = "QA", retrieval: str = "sentences", dtype: str | None = None,
            search: str = "bm25") -> Tool:
    """A QA tool: BM25 passages from ``corpus`` read by ``lm`` (or the model named ``model``);
    ``retrieval`` "sentences" (the best sentences of the top ``k`` = 3 passages, a grounded span or
    nothing) or "passages" (the top ``k`` = 2 passages, the reader's answer as it is); ``dtype`` the
    reader's (default ``$TOOLFORMER_TOOL_DTYPE``, else auto); ``search`` which passages: "bm25",
    "dense" or "hybrid" (:mod:`.dense`)."""
    qa = QAReader(model, lm, corpus, k, retrieval, dtype=dtype, search=search)

    def exclude(text: str, title: str):
        other = qa.excluding(text, title)
        return other.answer, other.answer_many, other.skip_key

    return Tool(
        name=name,
        fn=qa.answer,
        batch_fn=qa.answer_many,
        exclude=exclude,
        instruction=INSTRUCTION,
        demonstrations=DEMONSTRATIONS,
        settings=PAPER_DEFAULT,
        description="short answer span from the best sentences of BM25 passages, read by an LM (default: Qwen 0.5B); "
                    "no result unless the span is in them",
        version=f"reader={qa.reader.describe()}|k={qa.k}|corpus={corpus or 'default'}|v{READER_REVISION}"
                + (f"|sentences={qa.top}|support={MIN_SUPPORT}" if qa.sentence_level else "") + qa.search_version,
        timeout=60.0,
        concurrency=1,
        batch_size=128,  # a search campaign's shard asks ~90 distinct questions: one reader pass
        prepare=qa.prepare,
        max_input_chars=300,
        example_input="Who painted the Mona Lisa?",
        no_result_hint="the reader found no short answer in the retrieved passages",
    )


QA = qa_tool()
