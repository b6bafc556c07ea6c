"""WHERE clauses of the server list filters, answered by the database under the page limit.

Why SQL and not a pass over the rows: the list is paginated (``limit``,
``marker``); a filter applied after the page is cut would return short or
empty pages while matching servers exist further on.

Three kinds of filter, as Nova's instance query has them:

* exact: the column equals the value (or one of the values);
* regex: the column's text matches a regular expression anywhere in it
  (``name``, ``key_name``, ``availability_zone``...). SQLAlchemy renders it
  per backend (``REGEXP`` on MariaDB/MySQL, ``~`` on PostgreSQL, RE2 as
  the ``regexp`` function of SQLite); the API checks first that the pattern
  is one every backend runs in bounded time (``db/regexp.py``), so a bad
  one is a 400 rather than a driver error or a worker held for minutes;
* time windows: ``changes-since`` / ``changes-before`` on the time the
  server last changed (its creation time when never updated, which is what
  its ``updated`` key shows).

A server's zone is the zone of the compute it is on; a server that has no
host yet (building, shelved offloaded) is in the zone it asked for.
"""

import dataclasses
import datetime

import sqlalchemy as sa

from volumesvc import binaries, exception
from volumesvc.db import models
from volumesvc.objects.compute_host import DEFAULT_ZONE


@dataclasses.dataclass
class InstanceFilters:
    """The filters of one list request (empty: no filter).

    ``exact``: column name → value, or a list of accepted values;
    ``regex``: column name → pattern; ``zone``: pattern on the server's zone;
    ``since``/``before``: naive UTC bounds (inclusive) of the last change.
    """

    exact: dict = dataclasses.field(default_factory=dict)
    regex: dict = dataclasses.field(default_factory=dict)
    zone: str | None = None
    since: datetime.datetime | None = None
    before: datetime.datetime | None = None


def _as_text(column):
    if isinstance(column.type, sa.String):
        return column
    return sa.cast(column, sa.String)


def _matches(column, pattern):
    return _as_text(column).regexp_match(pattern)


def _zone_clause(model, pattern):
    zone = sa.func.coalesce(models.Service.availability_zone, DEFAULT_ZONE)
    hosts_in_zone = sa.select(models.Service.host).where(
        models.Service.binary == binaries.COMPUTE, models.Service.deleted == 0,
        zone.regexp_match(pattern))
    return sa.or_(
        sa.and_(model.host.is_not(None), model.host.in_(hosts_in_zone)),
        sa.and_(model.host.is_(None), _matches(model.availability_zone, pattern)))


def clauses(model, filters: InstanceFilters | None) -> list:
    """The WHERE clauses on ``model`` (instances) for ``filters``."""
    if filters is None:
        return []
    found: list = []
    for name, value in filters.exact.items():
        column = getattr(model, name)
        if isinstance(value, (list, tuple, set, frozenset)):
            found.append(column.in_(list(value)))
        elif value is None:
            found.append(column.is_(None))
        else:
            found.append(column == value)
    for name, pattern in filters.regex.items():
        found.append(_matches(getattr(model, name), pattern))
    if filters.zone is not None:
        found.append(_zone_clause(model, filters.zone))
    changed = sa.func.coalesce(model.updated_at, model.created_at)
    if filters.since is not None:
        found.append(changed >= filters.since)
    if filters.before is not None:
        found.append(changed <= filters.before)
    return found


# MariaDB's warning when PCRE2 gave up on a row (its match limit): the row
# then counts as not matching, and the list would be silently short.
_MARIADB_REGEX_ERROR = 1139


def check_pattern_warnings(session, filters: InstanceFilters | None) -> None:
    """Raise FilterPatternTooComplex if MariaDB gave up on a pattern in the last statement.

    Call right after the statement that used :func:`clauses`. PCRE2
    backtracks; a pattern RE2 accepts (``^(a+)+$``) can still exceed its
    match limit on a long enough name, and MariaDB answers "no match" with a
    warning rather than an error.
    """
    if filters is None or not (filters.regex or filters.zone is not None):
        return
    if session.get_bind().dialect.name != "mysql":
        return
    for _level, code, message in session.execute(sa.text("SHOW WARNINGS")):
        if int(code) == _MARIADB_REGEX_ERROR:
            raise exception.FilterPatternTooComplex(reason=message)
