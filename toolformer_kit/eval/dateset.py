"""DATESET (the paper's Appendix D): questions that need today's date, generated from templates.

Two generators. :func:`generate_paper_dateset` (task ``dateset``) follows the template families of
the paper's Table 11, which mix granularities and distances, so that many questions need only the
Calendar's sentence and a step of counting; :func:`generate_dateset` (task ``dateset-days``,
beyond the paper, and the ``dateset`` task until December 2026) asks for day-level arithmetic
across up to four years. Both draw seeded random current dates in 2010–2029.

For each of ``n`` seeded random "current dates" a second date is drawn up to four years before or
after it, and one template is picked; the truth comes from :mod:`datetime`. No question states
the current date, so a model can only answer by asking the Calendar (which, during evaluation,
says the example's date) or by luck. Templates (wording our own):

* ``days_ago`` / ``days_until`` — how many days ago was / until a given date;
* ``weekday_ago`` / ``weekday_in`` — the day of the week N days ago / from now;
* ``date_ago`` / ``date_in`` — the date N days ago / from now (answer in several spellings);
* ``holiday_days`` — days until the next US federal holiday (e.g. Thanksgiving);
* ``holiday_weekday`` — the day of the week of a fixed-date federal holiday this year.

>>> qs = generate_dateset(3, seed=1)
>>> [q.id for q in qs], qs == generate_dateset(3, seed=1)
(['dateset-0', 'dateset-1', 'dateset-2'], True)
>>> thanksgiving(2020)
datetime.date(2020, 11, 26)
"""

from __future__ import annotations

import datetime as dt
import random
from dataclasses import dataclass
from typing import Callable

FIRST_DAY = dt.date(2010, 1, 1)
LAST_DAY = dt.date(2029, 12, 31)
SPAN_DAYS = 4 * 365 + 1


@dataclass(frozen=True)
class DateQuestion:
    id: str
    today: dt.date
    question: str
    answers: tuple[str, ...]
    template: str
    other: dt.date | None = None


def nth_weekday(year: int, month: int, weekday: int, n: int) -> dt.date:
    """The n-th ``weekday`` (Monday = 0) of a month; n = -1 is the last one.

    >>> nth_weekday(2024, 1, 0, 3), nth_weekday(2024, 5, 0, -1)
    (datetime.date(2024, 1, 15), datetime.date(2024, 5, 27))
    """
    if n > 0:
        first = dt.date(year, month, 1)
        return first + dt.timedelta(days=(weekday - first.weekday()) % 7 + 7 * (n - 1))
    nxt = dt.date(year + month // 12, month % 12 + 1, 1)
    last = nxt - dt.timedelta(days=1)
    return last - dt.timedelta(days=(last.weekday() - weekday) % 7)


def thanksgiving(year: int) -> dt.date:
    return nth_weekday(year, 11, 3, 4)


# US federal holidays by their statutory date (not the weekday they are observed on)
HOLIDAYS: dict[str, Callable[[int], dt.date]] = {
    "New Year's Day": lambda y: dt.date(y, 1, 1),
    "Martin Luther King Jr. Day": lambda y: nth_weekday(y, 1, 0, 3),
    "Presidents' Day": lambda y: nth_weekday(y, 2, 0, 3),
    "Memorial Day": lambda y: nth_weekday(y, 5, 0, -1),
    "Independence Day": lambda y: dt.date(y, 7, 4),
    "Labor Day": lambda y: nth_weekday(y, 9, 0, 1),
    "Columbus Day": lambda y: nth_weekday(y, 10, 0, 2),
    "Veterans Day": lambda y: dt.date(y, 11, 11),
    "Thanksgiving": thanksgiving,
    "Christmas Day": lambda y: dt.date(y, 12, 25),
}

FIXED_DATE_HOLIDAYS = ("Christmas Day", "Independence Day", "New Year's Day", "Veterans Day")


def spell(date: dt.date) -> str:
    """``March 5, 2021``: how questions write a date."""
    return f"{date:%B} {date.day}, {date.year}"


def date_answers(date: dt.date) -> tuple[str, ...]:
    """The spellings of a date that count as correct.

    >>> date_answers(dt.date(2021, 3, 5))
    ('March 5, 2021', '5 March 2021', 'March 5th, 2021', '2021-03-05', '03/05/2021', '3/5/2021')
    """
    day = date.day
    suffix = "th" if 11 <= day % 100 <= 13 else {1: "st", 2: "nd", 3: "rd"}.get(day % 10, "th")
    return tuple(dict.fromkeys((
        spell(date), f"{day} {date:%B} {date.year}", f"{date:%B} {day}{suffix}, {date.year}",
        date.isoformat(), f"{date:%m/%d/%Y}", f"{date.month}/{day}/{date.year}")))


def next_holiday(today: dt.date, name: str) -> dt.date:
    """The holiday's next date strictly after ``today``."""
    this_year = HOLIDAYS[name](today.year)
    return this_year if this_year > today else HOLIDAYS[name](today.year + 1)


def _relative(today: dt.date, other: dt.date, rng: random.Random) -> tuple[str, str, tuple[str, ...]]:
    """A question about ``other`` relative to ``today`` (past or future)."""
    n = abs((other - today).days)
    past = other < today
    kind = rng.choice(("days", "weekday", "date"))
    if kind == "days":
        q = f"How many days ago was {spell(other)}?" if past else f"How many days are left until {spell(other)}?"
        return ("days_ago" if past else "days_until"), q, (str(n),)
    if kind == "weekday":
        q = (f"What day of the week was it {n} days ago?" if past
             else f"What day of the week will it be {n} days from today?")
        return ("weekday_ago" if past else "weekday_in"), q, (f"{other:%A}",)
    q = f"What was the date {n} days ago?" if past else f"What will the date be {n} days from now?"
    return ("date_ago" if past else "date_in"), q, date_answers(other)


def _holiday(today: dt.date, rng: random.Random) -> tuple[str, str, tuple[str, ...]]:
    if rng.random() < 0.5:
        name = rng.choice(sorted(HOLIDAYS))
        days = (next_holiday(today, name) - today).days
        return "holiday_days", f"How many days are left until the next {name}?", (str(days),)
    name = rng.choice(FIXED_DATE_HOLIDAYS)  # "Thanksgiving is on a Thursday" needs no calendar
    when = HOLIDAYS[name](today.year)
    return "holiday_weekday", f"On which day of the week is {name} this year?", (f"{when:%A}",)


# The paper's families (Table 11), wording our own. A granularity names what is asked and how the
# answer is written.
GRANULARITIES = ("day of the week", "day of the month", "month", "year")
NEAR_DAYS = {"the day before yesterday": -2, "yesterday": -1, "today": 0, "tomorrow": 1,
             "the day after tomorrow": 2}
PAPER_FAMILIES = ("near_day", "n_days", "weekday_of_date", "days_between")


def granular_answers(date: dt.date, granularity: str) -> tuple[str, ...]:
    """How a date's weekday, day of the month, month or year is written in an answer.

    >>> granular_answers(dt.date(2021, 3, 2), "day of the month"), granular_answers(dt.date(2021, 3, 2), "month")
    (('2', '2nd'), ('March',))
    """
    if granularity == "day of the week":
        return (f"{date:%A}",)
    if granularity == "month":
        return (f"{date:%B}",)
    if granularity == "year":
        return (str(date.year),)
    day = date.day
    suffix = "th" if 11 <= day % 100 <= 13 else {1: "st", 2: "nd", 3: "rd"}.get(day % 10, "th")
    return (str(day), f"{day}{suffix}")


def _near_day(today: dt.date, rng: random.Random) -> tuple[str, dt.date, str, tuple[str, ...]]:
    words, shift = rng.choice(sorted(NEAR_DAYS.items()))
    granularity = rng.choice(GRANULARITIES)
    verb = "is" if shift == 0 else ("was" if shift < 0 else "will")
    tail = f"will it be {words}" if verb == "will" else f"{verb} it {words}"
    other = today + dt.timedelta(days=shift)
    return "near_day", other, f"What {granularity} {tail}?", granular_answers(other, granularity)


def _n_days(today: dt.date, other: dt.date, rng: random.Random) -> tuple[str, dt.date, str, tuple[str, ...]]:
    n = abs((other - today).days)
    granularity = rng.choice(GRANULARITIES)
    q = (f"What {granularity} was it {n} days ago?" if other < today
         else f"What {granularity} will it be in {n} days?")
    return "n_days", other, q, granular_answers(other, granularity)


def _weekday_of_date(other: dt.date, today: dt.date) -> tuple[str, dt.date, str, tuple[str, ...]]:
    verb = "was" if other < today else "will be"
    return "weekday_of_date", other, f"What day of the week {verb} {spell(other)}?", (f"{other:%A}",)


def _days_between(today: dt.date, other: dt.date, rng: random.Random) -> tuple[str, dt.date, str, tuple[str, ...]]:
    if rng.random() < 0.5:
        name = rng.choice(sorted(HOLIDAYS))
        when = next_holiday(today, name)
        return "days_between", when, f"How many days are there until the next {name}?", (str((when - today).days),)
    n = abs((other - today).days)
    q = f"How many days ago was {spell(other)}?" if other < today else f"How many days are there until {spell(other)}?"
    return "days_between", other, q, (str(n),)


def generate_paper_dateset(n: int = 500, seed: int = 0, first: dt.date = FIRST_DAY,
                           last: dt.date = LAST_DAY) -> list[DateQuestion]:
    """``n`` questions of the paper's four families in equal shares (drawn per question), one per
    random current date, with a past or future second date within four years of it.

    >>> qs = generate_paper_dateset(4, seed=2)
    >>> qs == generate_paper_dateset(4, seed=2), all(q.id.startswith("dateset-") for q in qs)
    (True, True)
    """
    rng = random.Random(f"paper:{seed}")
    span = (last - first).days
    out = []
    for i in range(n):
        today = first + dt.timedelta(days=rng.randrange(span + 1))
        other = today + dt.timedelta(days=rng.randint(1, SPAN_DAYS) * rng.choice((-1, 1)))
        family = rng.choice(PAPER_FAMILIES)
        if family == "near_day":
            template, when, q, answers = _near_day(today, rng)
        elif family == "n_days":
            template, when, q, answers = _n_days(today, other, rng)
        elif family == "weekday_of_date":
            template, when, q, answers = _weekday_of_date(other, today)
        else:
            template, when, q, answers = _days_between(today, other, rng)
        out.append(DateQuestion(f"dateset-{i}", today, q, answers, template, when))
    return out


def generate_dateset(n: int = 500, seed: int = 0, first: dt.date = FIRST_DAY, last: dt.date = LAST_DAY,
                     holiday_share: float = 0.2) -> list[DateQuestion]:
    """``n`` questions, one per random current date; the same arguments give the same questions."""
    rng = random.Random(seed)
    span = (last - first).days
    out = []
    for i in range(n):
        today = first + dt.timedelta(days=rng.randrange(span + 1))
        offset = rng.randint(1, SPAN_DAYS) * rng.choice((-1, 1))
        other = today + dt.timedelta(days=offset)
        if rng.random() < holiday_share:
            (template, question, answers), other = _holiday(today, rng), None
        else:
            template, question, answers = _relative(today, other, rng)
        out.append(DateQuestion(f"dateset-{i}", today, question, answers, template, other))
    return out
