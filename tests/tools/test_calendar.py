"""The Calendar: today's date as text, and the document's own date for annotation."""

from __future__ import annotations

import datetime as dt

import pytest

from toolformer_kit.calls import ToolCall
from toolformer_kit.tools import PAPER_DEFAULT, get_tool
from toolformer_kit.tools.calendar import calendar_text, calendar_tool_for, document_date
from toolformer_kit.tools.engine import ToolEngine


def test_today():
    tool = get_tool("Calendar")
    assert tool("") == calendar_text(dt.date.today())
    assert tool("ignored input") == calendar_text(dt.date.today())
    assert tool.settings == PAPER_DEFAULT


@pytest.mark.parametrize("date, text", [
    (dt.date(2026, 11, 30), "Today is Monday, November 30, 2026."),
    (dt.date(2020, 11, 20), "Today is Friday, November 20, 2020."),
    (dt.date(2000, 2, 29), "Today is Tuesday, February 29, 2000."),
])
def test_calendar_text(date, text):
    assert calendar_text(date) == text


@pytest.mark.parametrize("doc, expected", [
    ({"url": "https://news.example.com/2019/03/14/storm"}, dt.date(2019, 3, 14)),
    ({"url": "https://example.org/blog/2021-07-04-fireworks.html"}, dt.date(2021, 7, 4)),
    ({"url": "http://example.org/archive/20200229/item.html"}, dt.date(2020, 2, 29)),
    ({"url": "https://example.org/events/14.03.2019/"}, dt.date(2019, 3, 14)),
    ({"url": "https://example.org/2019/03/"}, None),  # no day: never invented
    ({"url": "https://example.org/2019/13/45/"}, None),  # not a date
    ({"url": "https://example.org/item/1234567890"}, None),
    ({"url": "https://2019-03-14.example.org/page"}, None),  # a host name is not a date
    ({"date": "2018-05-01T10:20:00Z", "url": "https://x.org/2019/03/14/"}, dt.date(2018, 5, 1)),
    ({"published": "Thu, 14 Mar 2019 10:00:00 +0100"}, dt.date(2019, 3, 14)),
    ({"date": "March 3, 2011"}, dt.date(2011, 3, 3)),
    ({"date": "3 Sept. 2011"}, dt.date(2011, 9, 3)),
    ({"timestamp": 1_600_000_000}, dt.date(2020, 9, 13)),
    ({"date": "unknown", "url": "https://x.org/2015/06/01/a"}, dt.date(2015, 6, 1)),
    ({"date_download": "2019-03-14T00:00:00Z"}, None),  # a crawl date is not the document's date
    ({"text": "Written on 2019-03-14 but with no date field."}, None),
    ({}, None),
])
def test_document_date(doc, expected):
    assert document_date(doc) == expected


def test_bound_calendar_goes_through_the_engine_without_cache(tmp_path):
    day1, day2 = calendar_tool_for(dt.date(2019, 3, 14)), calendar_tool_for(dt.date(2020, 1, 1))
    path = str(tmp_path / "cache.sqlite")
    a = ToolEngine({"Calendar": day1}, cache_path=path).run([ToolCall("Calendar", "")])[0]
    b = ToolEngine({"Calendar": day2}, cache_path=path).run([ToolCall("Calendar", "")])[0]
    assert a.result == "Today is Thursday, March 14, 2019."
    assert b.result == "Today is Wednesday, January 1, 2020."
    assert day1.prompt_prefix() == get_tool("Calendar").prompt_prefix()
