"""The dates volumesvc-manage db archive_deleted_rows and db purge accept for --before."""

import datetime

import pytest

from volumesvc.cmd import manage_archive


@pytest.mark.parametrize("text, expected", [
    ("2026-10-21", (2026, 10, 21, 0, 0, 0)),
    ("2026-10-21 12:00", (2026, 10, 21, 12, 0, 0)),
    ("2026-10-21T12:00:30", (2026, 10, 21, 12, 0, 30)),
    # An offset is turned into UTC, the database's time.
    ("2026-10-21T12:00:00+02:00", (2026, 10, 21, 10, 0, 0)),
    ("2026-10-21 12:00:00Z", (2026, 10, 21, 12, 0, 0)),
    # What `date` prints in the C locale (two spaces before a one-digit day).
    ("Sat Dec  5 10:35:08 UTC 2026", (2026, 12, 5, 10, 35, 8)),
    ("Oct 21 2026", (2026, 10, 21, 0, 0, 0)),
    ("Oct 21 2026 12:00", (2026, 10, 21, 12, 0, 0)),
], ids=lambda value: None if isinstance(value, tuple) else value.replace(":", "."))
def test_accepted_dates_are_naive_utc(text, expected):
    value = manage_archive.parse_before(text)
    assert value.tzinfo is None
    assert value == datetime.datetime(*expected)


@pytest.mark.parametrize("text", ["", "yesterday", "31/31/2020", "2026-13-01"])
def test_anything_else_is_refused_with_an_example(text):
    with pytest.raises(ValueError, match="is not a date .*2026-10-21"):
        manage_archive.parse_before(text)
