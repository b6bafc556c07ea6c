"""The ``os-getConsoleOutput`` server action: the end of the guest's serial console log.

The log lives on the server's compute (``console.log`` in the instance's
directory), so the API asks that compute directly, a call within
``rpc_response_timeout``: a read needs no workflow, and
Nova's API does the same. The answer is 200 ``{"output": ...}`` with the
last ``length`` lines, of at most the newest 100 KiB of the log.

Errors, as Nova's: 404 for a server the caller cannot see, whose guest the
compute does not have, or that has no console; 409 for a server without a
host (not yet scheduled, or shelved offloaded: no guest anywhere); 400 for a
bad ``length``. volumesvc adds a 503 when the compute does not answer in
time.
:data:`ACTIONS` is merged into the dispatch table of ``server_actions.py``.
"""

import re

from volumesvc.api import errors, validation
from volumesvc.api.policies import console_output as policies
from volumesvc.api.policy import authorize
from volumesvc.api.request import get_instance
from volumesvc.api.schemas import console_output as schema

# The control characters Nova strips from the output: everything below
# space except tab and newline (a carriage return goes too).
_CONTROL = re.compile("[\x00-\x08\x0b-\x1f]")


def _check_compute(req, instance):
    """409 when the server has no compute (not yet scheduled, or shelved offloaded)."""
    if not instance.host:
        raise errors.APIError(409, f"Instance {instance.uuid} is not ready", errors.CONFLICT)


@validation.schema(schema.get_console_output)
def _get_console_output(req, server_id, body):
    """os-getConsoleOutput → 200 ``{"output": text}``; 400, 404, 409 (module docstring)."""
    # As Nova: the body is checked first, then the server, then the policy.
    body = validation.validate_body(_get_console_output, req.version, body)
    instance = get_instance(req, server_id)
    authorize(req.context, policies.CONSOLE_OUTPUT, {"project_id": instance.project_id})
    length = body.get("length")
    _check_compute(req, instance)
    output = req.deps.compute.get_console_output(
        req.context, host=instance.host, instance=instance.to_dict(),
        tail_length=None if length is None else int(length))
    return {"output": _CONTROL.sub("", output)}, 200


ACTIONS = {"os-getConsoleOutput": _get_console_output}
