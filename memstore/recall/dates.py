"""Calendar dates a query names ("on 13 October, 2023", "in July 2023", "in June"), for
recall's date evidence (memstore/recall/ranking.py, ``DATE_SHARE``).

Only absolute dates are read: a day with its month and year, a month with or
without its year, an ISO date. Relative ones ("last week") need a reference
moment the query does not carry, and a bare year ("in 2023") would lift most of
a long chat at once, so neither is read. Nothing here touches the database: the
rows a recall statement returns already carry each memory's ``observed_at``.
"""

from __future__ import annotations

import re
from datetime import date, datetime, timedelta
from typing import NamedTuple

_NAMES = "january february march april may june july august september october november december"
MONTHS = {name: number for number, name in enumerate(_NAMES.split(), start=1)}
_MONTH = "|".join(MONTHS)
_DAY = r"(\d{1,2})(?:st|nd|rd|th)?"
# "October 13, 2023", "May 23 2023"
_MONTH_DAY_YEAR = re.compile(rf"\b({_MONTH})\s+{_DAY},?\s+(\d{{4}})\b", re.IGNORECASE)
# "13 October, 2023", "1st of February 2023"
_DAY_MONTH_YEAR = re.compile(rf"\b{_DAY}\s+(?:of\s+)?({_MONTH}),?\s+(\d{{4}})\b", re.IGNORECASE)
_ISO = re.compile(r"\b(\d{4})-(\d{2})-(\d{2})\b")
# "July 2023", "in June"; "may" alone is the verb unless a preposition says otherwise.
_MONTH_YEAR = re.compile(rf"\b({_MONTH})(?:,?\s+(\d{{4}}))?\b", re.IGNORECASE)
_MAY_AS_MONTH = re.compile(r"\b(?:in|during|since|of|early|late|mid|until)\s+may\b", re.IGNORECASE)

# A memory observed up to this long after the named period still counts: what
# happened "in June" is often told in a conversation of early July.
GRACE = timedelta(days=7)


class Period(NamedTuple):
    """Days from ``start`` to ``end`` (exclusive); with ``start`` None, month ``month``
    of any year."""

    start: date | None
    end: date | None
    month: int | None = None

    def holds(self, moment: datetime | None, grace: timedelta = GRACE) -> bool:
        """Whether ``moment`` falls in the period, or within ``grace`` after it."""
        if moment is None:
            return False
        day = moment.date()
        if self.start is None or self.end is None:
            return self.month in (day.month, (day - grace).month)
        return self.start <= day < self.end + grace


def named_periods(text: str) -> list[Period]:
    """The calendar periods ``text`` names: days if it names any, else months.

    >>> named_periods("What did Maria donate on 3 June, 2023?")
    [Period(start=datetime.date(2023, 6, 3), end=datetime.date(2023, 6, 4), month=None)]
    >>> [p.month for p in named_periods("When did Mel go camping in June?")]
    [6]
    >>> named_periods("What may Mel paint next?")
    []
    """
    days = [
        (int(year), MONTHS[month.lower()], int(day))
        for month, day, year in _MONTH_DAY_YEAR.findall(text)
    ]
    days += [
        (int(year), MONTHS[month.lower()], int(day))
        for day, month, year in _DAY_MONTH_YEAR.findall(text)
    ]
    days += [(int(y), int(m), int(d)) for y, m, d in _ISO.findall(text)]
    if days:  # a day named (even one that does not exist) is not its month
        named = (_day(*day) for day in days)
        return [Period(day, day + timedelta(days=1)) for day in named if day is not None]
    periods = []
    for name, year in _MONTH_YEAR.findall(text):
        month = MONTHS[name.lower()]
        if name.lower() == "may" and not year and not _MAY_AS_MONTH.search(text):
            continue
        if year:
            start = _day(int(year), month, 1)
            if start is not None:
                end = date(start.year + month // 12, month % 12 + 1, 1)
                periods.append(Period(start, end))
        else:
            periods.append(Period(None, None, month))
    return periods


def _day(year: int, month: int, day: int) -> date | None:
    try:
        return date(year, month, day)
    except ValueError:  # "31 June": no such day, nothing named
        return None
