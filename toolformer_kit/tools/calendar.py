"""The Calendar: today's date as a sentence, or — while annotating — the document's own date.

Why a document date: a call's result must be what was true when the text was written, or the
filter would reward calls that contradict the text. The paper took the date from the page's URL
and skipped documents without one; :func:`document_date` does that, and also reads a date field
(``date``, ``published``, …) for corpora that carry one. A crawl date (CCNet's
``date_download``) says when a robot fetched the page, not when it was written, so it is not used.
Dates are never guessed: a URL with a year and month but no day gives None.

>>> import datetime
>>> calendar_text(datetime.date(2026, 11, 30))
'Today is Monday, November 30, 2026.'
>>> document_date({"url": "https://example.org/news/2019/03/14/storm-hits-coast"})
datetime.date(2019, 3, 14)
>>> document_date({"text": "no date here", "url": "https://example.org/about"}) is None
True
>>> calendar_tool_for(datetime.date(2021, 1, 1))("")
'Today is Friday, January 1, 2021.'
"""

from __future__ import annotations

import datetime as dt
import email.utils
import re
from dataclasses import replace
from typing import Optional

from ..calls import ToolCall, format_call
from .base import PAPER_DEFAULT, Tool

DATE_FIELDS = ("date", "published", "published_at", "publish_date", "pubdate", "date_published",
               "created", "created_at", "datetime", "timestamp", "time")
MIN_YEAR = 1900

_URL_DATES = [  # (pattern, group order) — year first is by far the most common in URLs
    (re.compile(r"(?<!\d)((?:19|20)\d\d)[/_.-](\d\d?)[/_.-](\d\d?)(?!\d)"), "ymd"),
    (re.compile(r"(?<!\d)((?:19|20)\d\d)(\d\d)(\d\d)(?!\d)"), "ymd"),
    (re.compile(r"(?<!\d)(\d\d?)[/_.-](\d\d?)[/_.-]((?:19|20)\d\d)(?!\d)"), "dmy"),
]
_MONTHS = {m.lower(): i for i, m in enumerate(
    ["January", "February", "March", "April", "May", "June", "July", "August", "September",
     "October", "November", "December"], start=1)}
_WORDY = re.compile(r"(\d{1,2})\s+([A-Za-z]+)\.?,?\s+(\d{4})|([A-Za-z]+)\.?\s+(\d{1,2}),?\s+(\d{4})")


def calendar_text(date: dt.date) -> str:
    """The Calendar's result for ``date``, spelled out so that an LM can read it."""
    return f"Today is {date:%A}, {date:%B} {date.day}, {date.year}."


def _plausible(year: int, month: int, day: int) -> Optional[dt.date]:
    if not MIN_YEAR <= year <= dt.date.today().year + 1:
        return None
    try:
        return dt.date(year, month, day)
    except ValueError:
        return None


def date_in_url(url: str) -> Optional[dt.date]:
    """The first full, valid date in a URL's path.

    >>> date_in_url("https://blog.example.com/2021-07-04-fireworks.html")
    datetime.date(2021, 7, 4)
    >>> date_in_url("https://x.org/archive/20200229/item"), date_in_url("https://x.org/2020/13/45/")
    (datetime.date(2020, 2, 29), None)
    """
    path = re.sub(r"^[a-z]+://[^/]*", "", url or "", flags=re.I)  # a host name holds no date
    for pattern, order in _URL_DATES:
        for m in pattern.finditer(path):
            a, b, c = (int(g) for g in m.groups())
            found = _plausible(a, b, c) if order == "ymd" else (_plausible(c, b, a) or _plausible(c, a, b))
            if found:
                return found
    return None


def _month(word: str) -> Optional[int]:
    word = word.lower()
    return next((n for name, n in _MONTHS.items() if len(word) >= 3 and name.startswith(word)), None)


def parse_date_value(value: object) -> Optional[dt.date]:
    """A date from a field value: ISO text, an RFC 2822 stamp (as in Debian changelogs), words such
    as "March 14, 2019", a Unix timestamp, or a date object.

    >>> parse_date_value("2019-03-14T09:30:00Z"), parse_date_value("Thu, 14 Mar 2019 10:00:00 +0100")
    (datetime.date(2019, 3, 14), datetime.date(2019, 3, 14))
    >>> parse_date_value("14 March 2019"), parse_date_value("sometime in spring")
    (datetime.date(2019, 3, 14), None)
    """
    if isinstance(value, dt.datetime):
        return value.date()
    if isinstance(value, dt.date):
        return value
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        try:
            d = dt.datetime.fromtimestamp(value, tz=dt.timezone.utc).date()
        except (OverflowError, OSError, ValueError):
            return None
        return _plausible(d.year, d.month, d.day)
    if not isinstance(value, str) or not value.strip():
        return None
    text = value.strip()
    m = re.match(r"((?:19|20)\d\d)-(\d\d)-(\d\d)", text)
    if m:
        return _plausible(*(int(g) for g in m.groups()))
    try:
        d = email.utils.parsedate_to_datetime(text).date()
        return _plausible(d.year, d.month, d.day)
    except (TypeError, ValueError, IndexError):
        pass
    m = _WORDY.search(text)
    if m:
        day, month, year = (m.group(1), m.group(2), m.group(3)) if m.group(1) else (m.group(5), m.group(4), m.group(6))
        month_n = _month(month)
        return _plausible(int(year), month_n, int(day)) if month_n else None
    return None


def document_date(doc: dict) -> Optional[dt.date]:
    """The document's own date from a date field or, failing that, its URL; None if it has none."""
    for key in DATE_FIELDS:
        if key in doc:
            found = parse_date_value(doc[key])
            if found:
                return found
    return date_in_url(str(doc.get("url") or ""))


def _demo(before: str, after: str) -> tuple[str, str]:
    return before + after, before + format_call(ToolCall("Calendar", "")) + after


INSTRUCTION = (
    "Your task is to add calls to a Calendar API to a piece of text. The call [Calendar()] "
    "returns today's date. Put a call just before words that depend on what day, month or year it "
    "is now. Here are some examples:"
)

DEMONSTRATIONS = [
    _demo("The festival returns next month, and tickets go on sale this", " Friday."),
    _demo("Our shop has been open for", " twelve years now, since it first opened in 2011."),
    _demo("It is the last week of", " June, so school is almost out."),
    _demo("The mayor said that the bridge will be finished by the end of", " this year."),
    _demo("Entries close in two days, on", " the 15th of this month."),
]


def calendar_tool_for(date: dt.date) -> Tool:
    """The Calendar bound to a fixed date: used when annotating a document written on ``date``."""
    return replace(CALENDAR, fn=lambda _text: calendar_text(date), version=date.isoformat(),
                   cacheable=False)


CALENDAR = Tool(
    name="Calendar",
    fn=lambda _text: calendar_text(dt.date.today()),
    instruction=INSTRUCTION,
    demonstrations=DEMONSTRATIONS,
    settings=PAPER_DEFAULT,
    description="today's date as a sentence (takes no input)",
    takes_input=False,
    max_input_chars=200,
    cacheable=False,
    example_input="",
    input_grammar="",  # the input is empty: [Calendar()]
)
