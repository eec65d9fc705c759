"""When a memory stops being true: ``until`` as people and models write it, to an aware end time.

Accepted: an ISO date (the end of that day, local time), an ISO date and time, "today", "tomorrow" and a
weekday name (the end of its next occurrence, today included). Anything else is refused with the forms that
work, so a typo never stores a memory that silently never expires.
"""

from __future__ import annotations

from datetime import date, datetime, time, timedelta

_WEEKDAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")


def _end_of(day: date) -> datetime:
    return datetime.combine(day, time(23, 59, 59)).astimezone()


def parse_until(text: str, now: datetime | None = None) -> datetime:
    """The end time ``text`` names; ValueError says what is accepted."""
    now = (now or datetime.now()).astimezone()
    word = text.strip().lower().removeprefix("until ").removeprefix("next ").strip()
    if word == "today":
        return _end_of(now.date())
    if word == "tomorrow":
        return _end_of(now.date() + timedelta(days=1))
    if word in _WEEKDAYS:
        ahead = (_WEEKDAYS.index(word) - now.weekday()) % 7
        return _end_of(now.date() + timedelta(days=ahead))
    try:
        if len(word) == 10:
            return _end_of(date.fromisoformat(word))
        parsed = datetime.fromisoformat(word.upper())
    except ValueError:
        raise ValueError(f"cannot read {text[:40]!r} as an end: use a date (2026-12-24), a date and time "
                         "(2026-12-24T18:00), today, tomorrow or a weekday") from None
    return parsed if parsed.tzinfo else parsed.astimezone()
