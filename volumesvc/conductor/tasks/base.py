"""Conductor tasks: one multi-step workflow per class, with its undo."""

from oslo_log import log as logging
from oslo_utils import excutils

LOG = logging.getLogger(__name__)


class TaskBase:
    """``execute()`` runs ``_execute()``; on any failure ``rollback()`` runs first.

    Subclasses record what they made as they go so ``rollback`` undoes
    exactly that (no half-made attachments, no lost records).
    """

    def __init__(self, context, instance_uuid):
        self.context = context
        self.instance_uuid = instance_uuid

    def execute(self):
        try:
            return self._execute()
        except Exception as exc:
            with excutils.save_and_reraise_exception():
                try:
                    self.rollback(exc)
                except Exception:  # noqa: BLE001 - keep the original error
                    LOG.exception("Rollback of %s for instance %s failed",
                                  type(self).__name__, self.instance_uuid)

    def _execute(self):
        raise NotImplementedError()

    def rollback(self, exc):
        """Undo what ``_execute`` did before failing (default: nothing)."""
