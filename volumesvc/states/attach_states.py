"""The ``attach_status`` vocabulary of a volume attachment (API 2.106).

Written once for the API, the conductor and the compute, which all move an
attachment along: the compute reserves it ``attaching`` and reports
``attached`` only once Cinder has completed the attachment and the disk is in
the guest; the API marks ``detaching``; a failed attach becomes ``error``; a
failed detach goes back to ``attached`` with a fault. Like ``task_states``
it imports no database code, so the compute can use it.
"""

from volumesvc import exception

ATTACHING = "attaching"
ATTACHED = "attached"
DETACHING = "detaching"
ERROR = "error"
STATUSES = (ATTACHING, ATTACHED, DETACHING, ERROR)

# Longer messages are cut: a fault is a reason, not a traceback.
MESSAGE_MAX = 4000


def shown(bdm) -> str:
    """The status the API reports for a BDM (a dict or an object).

    NULL is a BDM no attach moved along (a boot volume's, or one written
    before the column existed): it is shown ``attached``.
    """
    value = bdm.get("attach_status") if isinstance(bdm, dict) else bdm.attach_status
    return value or ATTACHED


def fault_code(exc) -> int:
    """An HTTP-like code for a failure: the exception's own, else 400/500."""
    code = getattr(exc, "code", None)
    if isinstance(code, int) and 400 <= code < 600:
        return code
    return 400 if isinstance(exc, exception.Invalid) else 500


def fault_values(status, code, message) -> dict:
    """BDM values recording ``status`` with a fault (``fault_at`` is stamped on save)."""
    return {"attach_status": status, "fault_code": int(code),
            "fault_message": str(message)[:MESSAGE_MAX]}


# Starting a detach forgets the previous failed one.
DETACH_STARTED = {"attach_status": DETACHING, "fault_code": None, "fault_message": None}
