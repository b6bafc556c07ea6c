"""The list filters' regular expressions: what is refused, and the SQLite REGEXP that runs them."""

import sqlite3

import pytest

from volumesvc.db import regexp

# A backtracking engine (Python's re) needs about 2**60 steps to fail this
# name against ^(a+)+$; it takes no measurable time only without backtracking.
LONG_NAME = "a" * 60 + "!"


@pytest.mark.parametrize("pattern", [
    "(" * 36,                    # unbalanced (fuzzer)
    "a{99999999999}",            # a count RE2 would take as text (fuzzer)
    "[",
    "(a)\\1",                    # a backreference needs backtracking
    "(?=web)",                   # so does lookaround
    "(?<!x)y",
    "((a{100}){100}){100}",      # nested counts past RE2's bound of 1000
    "a{1001}",
    "[^a]{1000}" * 10,           # a program past the memory bound
    "\ud800",                    # no UTF-8 text holds a lone surrogate
])
def test_check_refuses(pattern):
    with pytest.raises(regexp.InvalidPattern) as caught:
        regexp.check(pattern)
    assert str(caught.value) and len(str(caught.value)) < 120


@pytest.mark.parametrize("pattern", [
    "web", "^web-1$", "-1", "web-[0-9]+", "^(a+)+$", "(?i)WEB", "[[:alpha:]]+", "a{1000}",
    "(?P<name>x)", "^2026\\-03\\-01\\ 12:00:05",
], ids=lambda pattern: pattern.replace(":", "."))
def test_check_accepts_the_patterns_users_write(pattern):
    assert regexp.check(pattern) == pattern


def test_the_sqlite_function_searches_anywhere_and_keeps_null():
    search = regexp.sqlite_function()
    assert search("web-1", "prod-web-10") is True
    assert search("^web-1$", "web-10") is False
    assert search("web", None) is None
    assert search("^1$", 1) is True


def test_the_sqlite_function_does_not_backtrack():
    """The pathological pattern answers at once, and a correct answer on both branches."""
    search = regexp.sqlite_function()
    assert search("^(a+)+$", LONG_NAME) is False
    assert search("^(a+)+$|!$", LONG_NAME) is True


def test_a_pattern_the_check_refuses_fails_the_statement_not_the_process():
    connection = sqlite3.connect(":memory:")
    connection.create_function("regexp", 2, regexp.sqlite_function(), deterministic=True)
    assert connection.execute("SELECT ? REGEXP ?", (LONG_NAME, "^(a+)+$")).fetchone() == (0,)
    with pytest.raises(sqlite3.OperationalError):
        connection.execute("SELECT 'x' REGEXP ?", ("(a)\\1",)).fetchone()
