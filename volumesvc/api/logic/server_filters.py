"""The server list filters a request may use, per microversion and role, read into SQL terms.

Who may use what follows Nova's split: everyone filters by ``name``
(a regular expression), ``status``, ``image``, ``flavor``,
``reservation_id``, ``changes-since``, the fixed-address filters, the 2.26
tag filters, ``changes-before`` from 2.66 and ``locked`` from 2.73. From
2.83 everyone may also use the filters that were the admins' before
(:data:`USER_FILTERS_2_83`); callers passing the ``allow_all_filters``
policy have all of them at every version, plus ``host``, ``node``,
``hostname``, ``uuid`` and ``deleted``. A filter the caller may not use is
ignored, as in Nova (the strict query schema from 2.75 only refuses names
that are no filter at all).

The result is an :class:`InstanceFilters` for the objects layer, or
:data:`NOTHING` when the filter can match no server (an unknown flavor, a
``power_state`` that is no number): the handler then answers an empty list
without a query.
"""

import re

from oslo_utils import strutils, timeutils

from volumesvc import exception
from volumesvc.api import errors, validation
from volumesvc.api import microversions as mv
from volumesvc.db import regexp
from volumesvc.objects import flavor as flavor_obj
from volumesvc.objects.instance_filters import InstanceFilters

NOTHING = None
_NO_MATCH = object()

# 2.83: filters non-admins may use from then on (admins: at any version).
USER_FILTERS_2_83 = ("availability_zone", "config_drive", "key_name", "created_at",
                     "launched_at", "terminated_at", "power_state", "task_state",
                     "vm_state", "progress", "user_id")
# Query key → column, for the filters matched as a regular expression.
_REGEX_COLUMNS = {"key_name": "key_name", "config_drive": "config_drive",
                  "node": "node", "hostname": "hostname",
                  "reservation_id": "reservation_id"}
_TIME_COLUMNS = ("created_at", "launched_at", "terminated_at")
_INTEGER_COLUMNS = ("power_state", "progress")
_ADMIN_ONLY = ("node", "hostname", "uuid")


def parse_time(req, key):
    """The query key's ISO 8601 time as naive UTC, None when absent; 400 when no time."""
    value = req.last(key)
    if not value:
        return None
    try:
        return timeutils.normalize_time(timeutils.parse_isotime(value))
    except (ValueError, OverflowError):
        # OverflowError: 0001-01-01T00:00:00+01:00 is before datetime.min in UTC.
        # NOTE: jsonschema checks "date-time" only when rfc3339-validator
        # is installed, so the parse is the check that always runs.
        raise errors.APIError(400, f"Invalid input for query parameters {key}. Value: "
                              f"{value}. '{value}' is not a 'date-time'",
                              errors.QUERY_INVALID) from None


def _pattern(key, value):
    """``value`` as a pattern every backend runs in bounded time (``db/regexp.py``), else 400."""
    try:
        return regexp.check(value)
    except regexp.InvalidPattern as exc:
        raise errors.APIError(400, f"Invalid regular expression for the {key} filter: "
                              f"{exc}", errors.QUERY_INVALID) from None


# Digits, perhaps signed: a number, however long (int() refuses past 4300 digits).
_DIGITS = re.compile(r"\s*[+-]?[0-9]+\s*")


def _integer(key, value):
    """The integer filter's value; None when it is no number (matches no server).

    A number outside the column's range is a 400, not a database error
    (PostgreSQL and MariaDB refuse it; SQLite's driver cannot bind it).
    """
    if not _DIGITS.fullmatch(value):
        return None
    low, high = -validation.MAX_INT - 1, validation.MAX_INT
    # NOTE: int() refuses more than 4300 digits; so many are out of range anyway.
    number = int(value) if len(value) < 4000 else high + 1
    return validation.bounded_int(number, key, low, high, code=errors.QUERY_INVALID)


def _time_pattern(key, value):
    """A pattern on the column's text (``YYYY-MM-DD HH:MM:SS...``).

    A full ISO 8601 time (date ``T`` time, any offset) is that second in UTC;
    anything else is a regular expression on the text, so ``2026-12-02``
    matches the whole day.
    """
    if "T" in value:
        try:
            moment = timeutils.normalize_time(timeutils.parse_isotime(value))
        except (ValueError, OverflowError):
            pass
        else:
            return "^" + re.escape(moment.strftime("%Y-%m-%d %H:%M:%S"))
    return _pattern(key, value)


def _last_segment(value):
    """An id from an id or a link to it (as flavorRef/imageRef are)."""
    return value.rstrip("/").rsplit("/", 1)[-1]


def _flavor_row_id(req, value):
    try:
        return flavor_obj.get_by_flavorid(req.deps.db, req.context, _last_segment(value)).id
    except exception.FlavorNotFound:
        return _NO_MATCH


def _usable(req, allow_all) -> set:
    keys = {"name", "image", "flavor", "reservation_id", "changes-since"}
    if req.is_at_least(mv.V2_66_CHANGES_BEFORE):
        keys.add("changes-before")
    if req.is_at_least(mv.V2_73_LOCK_REASON):
        keys.add("locked")
    if allow_all or req.is_at_least(mv.V2_83_USER_FILTERS):
        keys.update(USER_FILTERS_2_83)
    if allow_all:
        keys.update(_ADMIN_ONLY)
    return {key for key in keys if req.last(key) not in (None, "")}


def _exact_and_regex(req, keys, filters):
    """Fill ``filters``; False when a value can match nothing."""
    for key in keys & {"name", *_REGEX_COLUMNS}:
        column = "display_name" if key == "name" else _REGEX_COLUMNS[key]
        filters.regex[column] = _pattern(key, req.last(key))
    for key in keys & set(_TIME_COLUMNS):
        filters.regex[key] = _time_pattern(key, req.last(key))
    for key in keys & set(_INTEGER_COLUMNS):
        number = _integer(key, req.last(key))
        if number is None:
            return False
        filters.exact[key] = number
    for key in keys & {"vm_state", "task_state"}:
        filters.exact[key] = [value for value in req.query[key] if value]
    for key in keys & {"user_id", "uuid"}:
        filters.exact[key] = req.last(key)
    if "image" in keys:
        filters.exact["image_ref"] = _last_segment(req.last("image"))
    if "flavor" in keys:
        flavor_id = _flavor_row_id(req, req.last("flavor"))
        if flavor_id is _NO_MATCH:
            return False
        filters.exact["flavor_id"] = flavor_id
    if "availability_zone" in keys:
        filters.zone = _pattern("availability_zone", req.last("availability_zone"))
    return True


def _locked(req, keys, filters):
    if "locked" not in keys:
        return
    value = req.last("locked")
    try:
        filters.exact["locked"] = strutils.bool_from_string(value, strict=True)
    except ValueError:
        raise errors.APIError(400, f"Unrecognized value '{value}' for the locked filter, "
                              "acceptable values are true or false.",
                              errors.QUERY_INVALID) from None


def from_request(req, allow_all: bool):
    """(:class:`InstanceFilters` or :data:`NOTHING`, whether a change window is set).

    ``allow_all``: the caller passes the ``allow_all_filters`` policy.
    Raises a 400 APIError for a bad time, pattern or ``locked`` value.
    """
    keys = _usable(req, allow_all)
    filters = InstanceFilters()
    filters.since = parse_time(req, "changes-since") if "changes-since" in keys else None
    filters.before = parse_time(req, "changes-before") if "changes-before" in keys else None
    if filters.since and filters.before and filters.since > filters.before:
        raise errors.APIError(400, "The value of changes-since must be less than or equal "
                              "to changes-before.", errors.QUERY_INVALID)
    _locked(req, keys, filters)
    window = filters.since is not None or filters.before is not None
    if not _exact_and_regex(req, keys, filters):
        return NOTHING, window
    return filters, window
