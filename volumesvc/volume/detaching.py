"""Beginning the detach of a volume in Cinder (``os-begin_detaching``), race-aware.

Cinder marks the whole volume ``detaching`` while one of its attachments is
being detached, and refuses (400) to begin another detach until that one has
ended, as it does while another server's attachment holds the volume
``reserved`` or ``attaching``. For a multiattach volume shared by several
servers that refusal is a matter of timing, not of the request: two detaches
sent together would see the second fail although both are valid. So the
refusal is retried, with the multiattach reservation's backoff
(``volume/reserve.py``), while the volume is multiattach and in a status the
wait can resolve, for at most ``[cinder] begin_detaching_timeout`` seconds.
A single-attach volume's refusal is final (it is not attached, or its one
detach is already running).
"""

import time

from oslo_log import log as logging

from volumesvc import exception
from volumesvc.volume import reserve

LOG = logging.getLogger(__name__)

# Statuses in which a refused begin-detaching can succeed later: another
# detach or attach of the volume is running, or has just ended.
RETRYABLE_STATUSES = ("detaching", "reserved", "attaching", "in-use")


def begin_detaching(conf, cinder, context, volume_id, *, sleep=time.sleep,
                    clock=time.monotonic):
    """``cinder.begin_detaching`` with the multiattach retry.

    The last refusal is raised as Cinder gave it (``Invalid``, a 400 for the
    API) once the timeout is spent; the last try is made at the deadline.
    """
    deadline = clock() + conf.cinder.begin_detaching_timeout
    interval = conf.cinder.attachment_reserve_interval
    attempt = 0
    while True:
        try:
            cinder.begin_detaching(context, volume_id)
            return
        except exception.Invalid as exc:
            remaining = deadline - clock()
            if remaining <= 0 or not reserve.retryable(cinder, context, volume_id,
                                                       RETRYABLE_STATUSES):
                raise
            delay = min(reserve.backoff(interval, attempt), remaining)
            LOG.info("Cinder refused to begin detaching multiattach volume %s (%s); "
                     "another detach or attach of it is running: retry %d in %.2fs",
                     volume_id, exc.format_message(), attempt + 1, delay)
            sleep(delay)
            attempt += 1
