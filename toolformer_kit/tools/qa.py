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

>>> print(reader_prompt("Who built it?", [("Tower", "Gustave Eiffel built the tower.")]).split("\\n\\n")[-1])
Passages:
(1) Tower: Gustave Eiffel built the tower.
Question: Who built it?
Answer:
>>> clean_answer("Leonardo da Vinci."), clean_answer("unknown"), clean_answer("")
('Leonardo da Vinci', None, None)
"""

from __future__ import annotations

import re
from typing import Optional, Sequence

from ..calls import ToolCall, format_call
from ..lm.base import LanguageModel
from .base import PAPER_DEFAULT, Tool
from .lmtool import LazyLM
from .wikisearch import BM25Index, default_index, snippet

MODEL_ENV = "TOOLFORMER_QA_MODEL"
MAX_ANSWER_WORDS = 12
PASSAGES = 2
PASSAGE_CHARS = 600

READER_INSTRUCTION = (
    "Answer each question with a short phrase copied from the passages. "
    "If the passages do not contain the answer, write: unknown"
)

# Worked examples for the reader, written for this project; the facts are in the passages.
READER_EXAMPLES = [
    ([("Danube", "The Danube is the second-longest river in Europe. It rises in the Black Forest in "
                  "Germany and flows into the Black Sea."),
      ("Rhine", "The Rhine begins in the Swiss Alps and flows to the North Sea.")],
     "Where does the Danube end?", "the Black Sea"),
    ([("Telephone", "Alexander Graham Bell was granted the first US patent for the telephone in 1876."),
      ("Radio", "Guglielmo Marconi sent radio signals across the Atlantic in 1901.")],
     "In what year was the telephone patented?", "1876"),
    ([("Saturn", "Saturn is the sixth planet from the Sun and has a prominent ring system.")],
     "Who was the first person on Mars?", "unknown"),
]


def _passage_block(passages: Sequence[tuple[str, str]]) -> str:
    return "\n".join(f"({i}) {title}: {text}" for i, (title, text) in enumerate(passages, 1))


def reader_prompt(question: str, passages: Sequence[tuple[str, str]]) -> str:
    """Instruction, worked examples, then the retrieved passages and the question."""
    blocks = [READER_INSTRUCTION]
    for ex_passages, ex_question, ex_answer in READER_EXAMPLES + [(passages, question, "")]:
        block = f"Passages:\n{_passage_block(ex_passages)}\nQuestion: {ex_question}\nAnswer:"
        blocks.append(block + (f" {ex_answer}" if ex_answer else ""))
    return "\n\n".join(blocks)


def clean_answer(text: str) -> Optional[str]:
    """The answer span, or None for "unknown", nothing, or a rambling sentence."""
    answer = re.sub(r"\s+", " ", text).strip().strip("\"'").rstrip(".").strip()
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


def qa_tool(model: str | None = None, lm: LanguageModel | None = None, corpus: str | None = None,
            k: int = PASSAGES, name: str = "QA") -> Tool:
    """A QA tool: BM25 passages from ``corpus`` read by ``lm`` (or the model named ``model``)."""
    reader = LazyLM(model, MODEL_ENV, lm)
    holder: dict[str, BM25Index] = {}

    def index() -> BM25Index:
        if "index" not in holder:
            holder["index"] = BM25Index(corpus) if corpus else default_index()
        return holder["index"]

    def prepare() -> None:
        index().index()
        reader.get()

    return Tool(
        name=name,
        fn=lambda question: answer_question(question, reader, index(), k),
        instruction=INSTRUCTION,
        demonstrations=DEMONSTRATIONS,
        settings=PAPER_DEFAULT,
        description="short answer span from BM25 passages read by an LM (default: Qwen 0.5B)",
        version=f"reader={reader.name}|k={k}|corpus={corpus or 'default'}",
        timeout=60.0,
        concurrency=1,
        prepare=prepare,
        max_input_chars=300,
        example_input="Who painted the Mona Lisa?",
        no_result_hint="the reader found no short answer in the retrieved passages",
    )


QA = qa_tool()
