"""Policy defaults in code, one module per resource (same name as its handler).

``list_rules`` is the ``oslo.policy.policies`` entry point. A new resource
adds its module to ``_MODULES``.
"""

import itertools

from volumesvc.api.policies import (
    base,
    flavors,
    instance_actions,
    server_actions,
    server_external_events,
    servers,
    services,
    volume_attachments,
)

_MODULES = (base, services, servers, server_actions, flavors, instance_actions,
            volume_attachments, server_external_events)


def list_rules():
    return list(itertools.chain.from_iterable(m.list_rules() for m in _MODULES))
