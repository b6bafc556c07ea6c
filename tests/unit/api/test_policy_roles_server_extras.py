"""Nova's 2023 role defaults of the server update, metadata, tag, lock and reset-state rules."""

import pytest
from oslo_context import context as oslo_context

from volumesvc.api import policy as policy_mod
from volumesvc.api.policies import server_admin_actions, server_metadata, server_tags, servers
from volumesvc.conf import get_conf

PROJECT, OTHER = "p-demo", "p-other"
READER, MEMBER, ADMIN = ("reader",), ("member", "reader"), ("admin",)

# rule -> the least role that passes in the owning project
CASES = {
    servers.UPDATE: MEMBER,
    server_metadata.INDEX: READER, server_metadata.SHOW: READER,
    server_metadata.CREATE: MEMBER, server_metadata.UPDATE: MEMBER,
    server_metadata.UPDATE_ALL: MEMBER, server_metadata.DELETE: MEMBER,
    server_tags.INDEX: READER, server_tags.SHOW: READER,
    server_tags.UPDATE: MEMBER, server_tags.UPDATE_ALL: MEMBER,
    server_tags.DELETE: MEMBER, server_tags.DELETE_ALL: MEMBER,
    server_admin_actions.LOCK: MEMBER, server_admin_actions.UNLOCK: MEMBER,
    server_admin_actions.UNLOCK_OVERRIDE: ADMIN,
    server_admin_actions.RESET_STATE: ADMIN,
}


@pytest.fixture(scope="module")
def enforcer():
    return policy_mod.make_enforcer(get_conf(default_config_files=[]))


def _allowed(enforcer, rule, roles, project=PROJECT):
    ctx = oslo_context.RequestContext(user_id="u", project_id=project, roles=list(roles))
    return bool(enforcer.authorize(rule, {"project_id": PROJECT, "user_id": "u"}, ctx,
                                   do_raise=False))


@pytest.mark.parametrize("rule", sorted(CASES), ids=lambda r: r.replace(":", "."))
def test_least_role_passes_and_the_one_below_does_not(enforcer, rule):
    least = CASES[rule]
    assert _allowed(enforcer, rule, least)
    assert _allowed(enforcer, rule, ADMIN)
    below = {MEMBER: READER, READER: (), ADMIN: MEMBER}[least]
    assert not _allowed(enforcer, rule, below)
    # Another project's member never passes; an admin of any project does.
    assert not _allowed(enforcer, rule, MEMBER, project=OTHER)
    assert _allowed(enforcer, rule, ADMIN, project=OTHER)
