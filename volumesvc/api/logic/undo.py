"""Undo what a failed request had already made elsewhere (Cinder, Glance).

A refusal must leave nothing behind: an attachment left reserved keeps the
volume ``reserved``, a snapshot left over keeps its volume from being
deleted. Each undo is tried even when an earlier one fails, and a failed
undo is logged but never hides the error that made it necessary.
"""

from oslo_log import log as logging

LOG = logging.getLogger(__name__)


def each(undo, ids, what: str) -> None:
    """Call ``undo(id)`` for every id; log (never raise) the ones that fail."""
    for item in ids:
        try:
            undo(item)
        except Exception:  # noqa: BLE001 - cleanup must try every one
            LOG.exception("Could not delete %s %s after a failed request", what, item)
