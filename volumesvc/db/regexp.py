"""The regular expressions of the list filters: checked before any database runs them.

Why: a filter pattern comes from any user, and a backtracking engine
(Python's ``re``, which SQLAlchemy registers as SQLite's ``REGEXP``, or
MariaDB's PCRE2) takes time exponential in the length of the text for a
pattern such as ``^(a+)+$``: a 28-character server name held an API worker
for 8 s. RE2 matches in time linear in the text and has no backtracking
constructs at all, so:

* :func:`check` accepts a pattern only if RE2 compiles it within a memory
  bound (backreferences and lookaround are refused, as are programs too
  large) *and* Python's ``re`` parses it. The second test keeps the syntax
  the API accepted before and refuses what PostgreSQL and MariaDB refuse but
  RE2 would read as plain text (``a{99999999999}``: RE2 takes a count it
  cannot read as literal characters).
* :func:`sqlite_function` is the ``REGEXP`` that SQLite connections run
  (see ``db/api.py``): RE2 instead of ``re``.
* PostgreSQL's engine needs backtracking only for backreferences, which
  :func:`check` refuses. MariaDB's PCRE2 gives up on a row after its match
  limit with a warning and answers "no match": ``objects/instance.py``
  turns that warning into an error instead of a silently short list.
"""

import functools
import re
import warnings

import re2

# The RE2 program and its DFA cache for one pattern stay below this; a
# pattern that needs more is refused (RE2's default is 8 MiB).
MAX_PROGRAM_BYTES = 1 << 20
# Compiled patterns a SQLite connection keeps (a list request uses a few).
_CACHED_PER_CONNECTION = 32


class InvalidPattern(ValueError):
    """The pattern is no regular expression the list filters can run; str() says why."""


def _options():
    options = re2.Options()
    options.max_mem = MAX_PROGRAM_BYTES
    # NOTE: otherwise RE2 writes every refused user pattern to stderr.
    options.log_errors = False
    return options


def compile_linear(pattern: str):
    """``pattern`` compiled by RE2; :class:`InvalidPattern` when RE2 refuses it."""
    try:
        return re2.compile(pattern, _options())
    except re2.error as exc:
        reason = exc.args[0] if exc.args else "refused"
        if isinstance(reason, bytes):
            reason = reason.decode("utf-8", "replace")
        # RE2 quotes the rest of the pattern, which may be long.
        raise InvalidPattern(reason if len(reason) <= 80 else reason[:80] + "...") from None
    except UnicodeError:
        # A lone surrogate: no UTF-8 text can hold it.
        raise InvalidPattern("the pattern is not valid Unicode text") from None


def check(pattern: str) -> str:
    """``pattern`` if every backend can run it in bounded time, else :class:`InvalidPattern`."""
    compile_linear(pattern)
    try:
        with warnings.catch_warnings():
            # "Possible nested set" and the like: a syntax hint, not an error.
            warnings.simplefilter("ignore")
            re.compile(pattern)
    except re.error as exc:
        raise InvalidPattern(str(exc)) from None
    except (OverflowError, RecursionError) as exc:
        # A repeat count past C's int; groups nested deeper than the parser recurses.
        raise InvalidPattern(str(exc) or exc.__class__.__name__) from None
    return pattern


def sqlite_function():
    """A ``regexp(pattern, text)`` for ``sqlite3.Connection.create_function``.

    True when ``pattern`` matches anywhere in ``text`` (None for a NULL text,
    as SQL comparisons go), matched by RE2. Each call of this function makes
    a new one with its own cache of compiled patterns, so that a connection
    owns its cache.
    """
    compiled = functools.lru_cache(maxsize=_CACHED_PER_CONNECTION)(compile_linear)

    def regexp(pattern, text):
        if text is None or pattern is None:
            return None
        regex = compiled(pattern)
        if not isinstance(text, str):
            text = str(text)
        try:
            return regex.search(text) is not None
        except UnicodeError:
            return regex.search(text.encode("utf-8", "replace").decode("utf-8")) is not None

    return regexp
