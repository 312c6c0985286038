"""wiki-cloze (issue 28, item 2): held-out Wikipedia facts, built from the real summaries and
checked against the real evaluation-time index (both cheap: ~1 s)."""

from __future__ import annotations

import pytest

from toolformer_kit.eval.metrics import contains_answer
from toolformer_kit.eval.tasks import get_task
from toolformer_kit.eval.tasks.lama import PROMPT
from toolformer_kit.eval.tasks.wikicloze import (HELDOUT_SIZE, build_items, cloze_candidates, heldout_titles,
                                                 sentence_fact, wiki_summaries)
from toolformer_kit.measures.ceiling import question_of
from toolformer_kit.tools.wikisearch import default_index


@pytest.fixture(scope="module")
def items():
    return get_task("wiki-cloze").load("/no/data/needed")


@pytest.fixture(scope="module")
def summaries():
    return wiki_summaries()


def test_the_held_out_set_is_fixed_and_seeded(summaries):
    titles = heldout_titles(summaries)
    assert len(titles) == HELDOUT_SIZE == len(set(titles))
    assert titles == heldout_titles(dict(sorted(summaries.items(), reverse=True)))  # not the file order
    assert titles != heldout_titles(summaries, seed=1)
    assert all(len(summaries[t].split()) >= 40 for t in titles)


def test_every_item_is_a_held_out_fact_retrievable_from_its_prompt(items, summaries):
    held = set(heldout_titles(summaries))
    index = default_index()
    assert 200 <= len(items) <= HELDOUT_SIZE and len({e.id for e in items}) == len(items)
    for ex in items:
        title = ex.meta["title"]
        statement = question_of(ex.prompt)
        (answer,) = ex.answers
        assert title in held and ex.prompt == PROMPT.format(statement=statement)
        assert not contains_answer(statement, [answer])  # the prompt does not give the answer away
        assert f"{statement} {answer}" in " ".join(summaries[title].split())  # the sentence-final fact, as written
        assert contains_answer(index.search(statement, 1)[0].text, [answer])  # retrievable at top 1


def test_items_are_scored_as_lama_is(items):
    task, ex = get_task("wiki-cloze"), items[0]
    answer = ex.answers[0]
    assert task.metric == "first5" and task.max_new_tokens == 16
    assert task.score(f" {answer}, as everyone knows", ex)
    assert not task.score(f"one two three four five {answer}", ex)
    assert task.policy.excluded == ()  # searching at test time is the point


def test_a_fact_is_a_name_or_a_number_at_the_very_end():
    assert sentence_fact("Marie Curie was born in Warsaw.") == ("Marie Curie was born in", "Warsaw")
    assert sentence_fact("It was signed by Sweden, France and Spain.")[1] == "Spain"  # the last of a list
    assert sentence_fact("It is a large river in the north.") is None
    assert sentence_fact("It has 1,234,567 people.") is None  # not a two-to-four digit number
    assert cloze_candidates("X", "Warsaw is where Warsaw lies in Warsaw.") == []  # prompt holds the answer
    assert cloze_candidates("X", "Born in Warsaw.") == []  # statement too short


def test_an_item_needs_the_top_passage_to_hold_the_answer():
    text = {"Ulm": "Albert Einstein the physicist was born in Ulm."}
    assert build_items(text, ["Ulm"], lambda q, k: ["Einstein was born in Ulm in 1879."])[0].answers == ("Ulm",)
    assert build_items(text, ["Ulm"], lambda q, k: ["Einstein was a physicist."]) == []
    assert build_items(text, ["Ulm"], lambda q, k: []) == []


def test_a_misspelt_task_name_suggests_wiki_cloze():
    with pytest.raises(KeyError, match="did you mean 'wiki-cloze'"):
        get_task("wiki-cloz")
