"""DATESET: seeded, 500 current dates, second dates within four years, truths that check out."""

import datetime as dt
import re

import pytest
from collections import Counter

from toolformer_kit.eval.dateset import HOLIDAYS, generate_dateset, next_holiday, thanksgiving
from toolformer_kit.eval.tasks import get_task
from toolformer_kit.tools.calendar import calendar_tool_for


def test_size_seed_and_spread():
    qs = generate_dateset()
    assert len(qs) == 500 and len({q.id for q in qs}) == 500
    assert qs == generate_dateset() and qs != generate_dateset(seed=1)
    assert len({q.today for q in qs}) > 450
    templates = Counter(q.template for q in qs)
    assert set(templates) == {"days_ago", "days_until", "weekday_ago", "weekday_in", "date_ago",
                              "date_in", "holiday_days", "holiday_weekday"}
    assert min(templates.values()) >= 20


def test_every_answer_is_the_truth():
    for q in generate_dateset(500, seed=3):
        if q.other is not None:
            assert 1 <= abs((q.other - q.today).days) <= 4 * 365 + 1
            assert (q.other < q.today) == q.template.endswith("ago")
            n = abs((q.other - q.today).days)
        if q.template in ("days_ago", "days_until"):
            assert q.answers == (str(n),) and q.other.strftime("%B") in q.question
        elif q.template.startswith("weekday"):
            assert f" {n} days" in q.question
            assert q.answers == ((q.today + dt.timedelta(days=n if q.template == "weekday_in" else -n)).strftime("%A"),)
        elif q.template.startswith("date"):
            assert f" {n} days" in q.question
            assert q.answers[0] == f"{q.other:%B} {q.other.day}, {q.other.year}"
            assert q.other.isoformat() in q.answers
        elif q.template == "holiday_days":
            name = re.search(r"the next (.+)\?", q.question).group(1)
            target = q.today + dt.timedelta(days=int(q.answers[0]))
            assert target == HOLIDAYS[name](target.year) and 1 <= int(q.answers[0]) <= 366
        else:
            name = re.search(r"is (.+) this year", q.question).group(1)
            assert q.answers == (HOLIDAYS[name](q.today.year).strftime("%A"),)
        assert str(q.today.year) not in q.question or q.template in ("days_ago", "days_until")


def test_known_holidays():
    assert thanksgiving(2023) == dt.date(2023, 11, 23) and thanksgiving(2024) == dt.date(2024, 11, 28)
    assert HOLIDAYS["Memorial Day"](2021) == dt.date(2021, 5, 31)
    assert HOLIDAYS["Labor Day"](2022) == dt.date(2022, 9, 5)
    assert HOLIDAYS["Martin Luther King Jr. Day"](2020) == dt.date(2020, 1, 20)
    assert next_holiday(dt.date(2020, 12, 25), "Christmas Day") == dt.date(2021, 12, 25)


def test_task_binds_the_calendar_to_the_example_date():
    task = get_task("dateset")
    ex = task.load("/unused")[1]
    tools = task.policy.tools_for(ex, {"Calendar": calendar_tool_for(dt.date(1999, 1, 1)), "Calculator": object()})
    today = dt.date.fromisoformat(ex.meta["today"])
    assert tools["Calendar"]("") == f"Today is {today:%A}, {today:%B} {today.day}, {today.year}."
    assert "Calculator" in tools
    assert task.score(f" {ex.answers[0]} is the answer", ex)


def test_paper_families_cover_table_11_and_answers_check_out():
    from toolformer_kit.eval.dateset import PAPER_FAMILIES, generate_paper_dateset
    qs = generate_paper_dateset()
    assert len(qs) == 500 and qs == generate_paper_dateset() and qs != generate_paper_dateset(seed=1)
    shares = Counter(q.template for q in qs)
    assert set(shares) == set(PAPER_FAMILIES) and min(shares.values()) >= 90
    asked = Counter(re.match(r"What (day of the week|day of the month|month|year) ", q.question).group(1)
                    for q in qs if q.template in ("near_day", "n_days"))
    assert len(asked) == 4 and min(asked.values()) >= 20
    for q in qs:
        shift = (q.other - q.today).days
        if q.template == "near_day":
            assert -2 <= shift <= 2
        elif q.template == "days_between":
            assert q.answers == (str(abs(shift)),)
        else:
            assert 1 <= abs(shift) <= 4 * 365 + 1
        if q.question.startswith("What day of the week"):
            assert q.answers == (f"{q.other:%A}",)
        elif q.question.startswith("What day of the month"):
            assert q.answers[0] == str(q.other.day)
        elif q.question.startswith("What month"):
            assert q.answers == (f"{q.other:%B}",)
        elif q.question.startswith("What year"):
            assert q.answers == (str(q.other.year),)
        if q.template == "n_days":
            assert f" {abs(shift)} days" in q.question and (shift < 0) == q.question.endswith("ago?")


def test_dateset_is_the_papers_and_dateset_days_keeps_day_arithmetic():
    paper = get_task("dateset").load("/unused")
    days = get_task("dateset-days").load("/unused")
    assert {e.meta["template"] for e in paper} == {"near_day", "n_days", "weekday_of_date", "days_between"}
    assert {e.meta["template"] for e in days} == {q.template for q in generate_dateset()}
    assert get_task("dateset-days").exercises == "Calendar"


def test_another_seed_draws_an_unseen_dateset_under_the_same_families():
    from toolformer_kit.eval.report import task_info
    from toolformer_kit.eval.tasks import get_task

    first, other = get_task("dateset").load("."), get_task("dateset@1").load(".")
    assert len(other) == len(first) and {e.prompt for e in other} != {e.prompt for e in first}
    assert {e.meta["template"] for e in other} == {e.meta["template"] for e in first}
    assert get_task("dateset-days@1").load(".")[0].meta["template"] in {e.meta["template"] for e in get_task("dateset-days").load(".")}
    assert task_info("dateset@1")[0] == "Calendar"
    with pytest.raises(Exception, match="seed after '@' must be a whole number"):
        get_task("dateset@x")
