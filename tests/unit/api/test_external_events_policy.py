"""Who may post os-server-external-events: a service or an admin (Nova's default)."""

import pytest
from oslo_policy import policy as oslo_policy

from volumesvc import context as vs_context
from volumesvc.api import policy
from volumesvc.api.policies import server_external_events as policies
from volumesvc.conf import get_conf


@pytest.fixture(scope="module")
def enforcer():
    return policy.make_enforcer(get_conf(args=[], default_config_files=[]))


@pytest.mark.parametrize("roles, allowed", [
    (["service"], True),
    (["admin"], True),
    (["member", "reader"], False),
    (["reader"], False),
])
def test_service_or_admin(enforcer, roles, allowed):
    ctx = vs_context.RequestContext(user_id="u", project_id="p", roles=roles,
                                    is_admin="admin" in roles)
    target = {"project_id": "p", "user_id": "u"}
    if allowed:
        assert enforcer.authorize(policies.CREATE, target, ctx, do_raise=True)
    else:
        with pytest.raises(oslo_policy.PolicyNotAuthorized):
            enforcer.authorize(policies.CREATE, target, ctx, do_raise=True)
