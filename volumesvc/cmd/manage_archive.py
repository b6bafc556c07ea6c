"""``volumesvc-manage db archive_deleted_rows`` and ``db purge``: Nova's housekeeping.

``archive_deleted_rows [--max_rows N] [--before DATE] [--verbose]
[--until-complete] [--sleep S] [--purge]``
    Move soft-deleted rows, with the rows that refer to them, into the
    ``shadow_*`` tables (``volumesvc/db/archive.py`` says what stays).
    ``--max_rows`` (default 1000) bounds one pass; ``--until-complete``
    repeats passes of that size, ``--sleep`` seconds apart, until nothing is
    left; ``--purge`` empties the shadow tables afterwards if anything moved.
    Exit codes: 0 nothing was archived, 1 rows were archived (run it again
    while it says 1, or use ``--until-complete``), 2 invalid ``--max_rows``,
    4 invalid ``--before``.

``purge (--all | --before DATE) [--verbose]``
    Delete archived rows: all of them, or those of servers, BDMs and services
    deleted before DATE with the rows that referred to them (with both
    options, ``--before`` decides, as in Nova).
    Exit codes: 0 rows were deleted, 1 neither ``--all`` nor ``--before``,
    2 invalid ``--before``, 3 nothing was purged.

DATE is ISO 8601 (``2026-10-21``, ``2026-10-21 12:00``, with or without an
offset), the ``date`` command's default output, or ``Oct 21 2026``; a time
without an offset is UTC.
"""

import datetime
import re
import time

ARCHIVE_NOTHING, ARCHIVE_SOME, ARCHIVE_BAD_MAX_ROWS, ARCHIVE_BAD_BEFORE = 0, 1, 2, 4
PURGE_DONE, PURGE_NO_SCOPE, PURGE_BAD_BEFORE, PURGE_NOTHING = 0, 1, 2, 3
DEFAULT_MAX_ROWS = 1000

# ``date``'s default output in the C locale, and a short month-day-year form.
_DATE_FORMATS = ("%a %b %d %H:%M:%S %Z %Y", "%a %b %d %H:%M:%S %Y", "%b %d %Y",
                 "%b %d %Y %H:%M", "%b %d %Y %H:%M:%S")


def parse_before(text: str) -> datetime.datetime:
    """``text`` as a naive UTC datetime (the database's convention); ValueError if unreadable."""
    text = re.sub(r"\s+", " ", text.strip())
    try:
        value = datetime.datetime.fromisoformat(text)
    except ValueError:
        for fmt in _DATE_FORMATS:
            try:
                value = datetime.datetime.strptime(text, fmt)
                break
            except ValueError:
                continue
        else:
            raise ValueError(f"{text!r} is not a date (use e.g. 2026-10-21 or "
                             "'2026-10-21 12:00', or the date command's output)") from None
    if value.tzinfo is not None:
        value = value.astimezone(datetime.UTC).replace(tzinfo=None)
    return value


def add_parsers(db_actions):
    archive = db_actions.add_parser("archive_deleted_rows",
                                    help="Move soft-deleted rows into the shadow tables.")
    archive.add_argument("--max_rows", "--max-rows", dest="max_rows", type=int,
                         default=DEFAULT_MAX_ROWS,
                         help="rows to move in one pass, children included (default "
                              f"{DEFAULT_MAX_ROWS})")
    archive.add_argument("--before", default=None,
                         help="only rows deleted before this date")
    archive.add_argument("--verbose", action="store_true",
                         help="print how many rows were archived per table")
    archive.add_argument("--until-complete", dest="until_complete", action="store_true",
                         help="repeat passes of --max_rows until nothing is left")
    archive.add_argument("--sleep", type=float, default=0.0,
                         help="seconds between the passes of --until-complete")
    archive.add_argument("--purge", action="store_true",
                         help="purge every shadow table afterwards if rows were archived")
    purge = db_actions.add_parser("purge", help="Delete rows from the shadow tables.")
    purge.add_argument("--all", dest="purge_all", action="store_true",
                       help="purge every row of the shadow tables")
    purge.add_argument("--before", default=None,
                       help="purge rows deleted before this date")
    purge.add_argument("--verbose", action="store_true",
                       help="print how many rows were purged per table")


def _before(args):
    """(``--before`` as naive UTC, or None when not given; the error to print, or None)."""
    if not args.before:
        return None, None
    try:
        return parse_before(args.before), None
    except ValueError as exc:
        return None, f"Invalid value for --before: {exc}"


def _print_counts(counts, header, print_table):
    rows = [{"Table": name, header: count} for name, count in sorted(counts.items())]
    print_table(rows, ["Table", header])


def archive_deleted_rows(conf, args, print_table) -> int:
    from volumesvc.db import api as db_api
    from volumesvc.db import archive

    if args.max_rows < 1:
        print(f"--max_rows must be a positive number of rows, not {args.max_rows}")
        return ARCHIVE_BAD_MAX_ROWS
    before, error = _before(args)
    if error:
        print(error)
        return ARCHIVE_BAD_BEFORE
    totals: dict[str, int] = {}
    database = db_api.Database(conf)
    try:
        while True:
            moved = archive.archive_deleted_rows(
                database, max_rows=args.max_rows, before=before,
                failed_attachment_ttl=conf.api.failed_attachment_ttl)
            for name, count in moved.items():
                totals[name] = totals.get(name, 0) + count
            if not args.until_complete or not moved:
                break
            time.sleep(args.sleep)
        if args.verbose:
            if totals:
                _print_counts(totals, "Number of Rows Archived", print_table)
            else:
                print("Nothing was archived.")
        if totals and args.purge:
            purged = archive.purge_shadow_tables(database)
            if args.verbose:
                _print_counts(purged, "Number of Rows Purged", print_table)
    finally:
        database.dispose()
    return ARCHIVE_SOME if totals else ARCHIVE_NOTHING


def purge(conf, args, print_table) -> int:
    from volumesvc.db import api as db_api
    from volumesvc.db import archive

    if not args.purge_all and not args.before:
        print("Either --before or --all is required")
        return PURGE_NO_SCOPE
    before, error = _before(args)
    if error:
        print(error)
        return PURGE_BAD_BEFORE
    database = db_api.Database(conf)
    try:
        # As in Nova, --before narrows --all when both are given.
        deleted = archive.purge_shadow_tables(database, before=before)
    finally:
        database.dispose()
    if args.verbose:
        if deleted:
            _print_counts(deleted, "Number of Rows Purged", print_table)
        else:
            print("Nothing was purged.")
    return PURGE_DONE if deleted else PURGE_NOTHING
