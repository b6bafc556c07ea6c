"""Reserving a volume in Cinder (an attachment without a connector), race-aware.

Cinder 29 reserves an attachment only while the volume is ``available``
or ``in-use`` (multiattach) and refuses with 400 while another server's
attachment holds it ``reserved`` or ``attaching``. For a multiattach volume
that refusal is a matter of timing, not of the request: two attaches sent at
the same moment would see one of them fail. So the refusal is retried with
a bounded exponential backoff while the volume is multiattach and in a
status the wait can resolve. A single-attach volume's refusal is final (the
other server has it).
"""

import random
import time

from oslo_log import log as logging

from volumesvc import exception

LOG = logging.getLogger(__name__)

# Statuses in which a refused multiattach reservation can succeed later:
# busy with another attachment, or already past it.
RETRYABLE_STATUSES = ("reserved", "attaching", "detaching", "in-use", "available")
_BACKOFF_CAP = 8  # the longest wait, in multiples of the first one


def backoff(interval, attempt, rand=random.uniform):
    """The wait before retry ``attempt`` (0-based): doubling, capped, jittered."""
    return interval * min(2 ** attempt, _BACKOFF_CAP) * rand(0.75, 1.25)


def retryable(cinder, context, volume_id, statuses=RETRYABLE_STATUSES) -> bool:
    """Whether a refusal about ``volume_id`` is one of timing: multiattach, in ``statuses``."""
    try:
        volume = cinder.get(context, volume_id)
    except exception.VolumesvcException:
        return False
    return bool(volume.get("multiattach")) and volume.get("status") in statuses


def attachment_create(conf, cinder, context, volume_id, instance_uuid, *, mode=None,
                      sleep=time.sleep):
    """``cinder.attachment_create`` with the multiattach retry; returns the attachment.

    ``mode``: Cinder's attachment mode (``ro``/``rw``; None leaves it to Cinder).

    ``[cinder] attachment_reserve_retries`` and ``attachment_reserve_interval``
    bound the retry. The last refusal is raised as Cinder gave it
    (``Invalid``, a 400 for the API).
    """
    retries = conf.cinder.attachment_reserve_retries
    interval = conf.cinder.attachment_reserve_interval
    attempt = 0
    while True:
        try:
            return cinder.attachment_create(context, volume_id, instance_uuid, mode=mode)
        except exception.Invalid as exc:
            if attempt >= retries or not retryable(cinder, context, volume_id):
                raise
            delay = backoff(interval, attempt)
            LOG.info("Cinder refused to reserve multiattach volume %s for %s (%s); "
                     "retry %d/%d in %.2fs", volume_id, instance_uuid,
                     exc.format_message(), attempt + 1, retries, delay)
            sleep(delay)
            attempt += 1
