"""The policy defaults with real roles (Nova's 2023 defaults) and oslo.policy's switches.

Each case is a caller (roles, project, scope) and a rule of the registered
defaults, decided by the same enforcer the app builds.
"""

import flask
import pytest
from oslo_context import context as oslo_context

from volumesvc import exception
from volumesvc.api import policy as policy_mod
from volumesvc.api.policies import servers, volume_attachments
from volumesvc.conf import get_conf

PROJECT, OTHER = "p-demo", "p-other"
# oslo.policy warns once per rule whose legacy default is in force.
pytestmark = pytest.mark.filterwarnings("ignore:Policy .* was deprecated:UserWarning")


def _ctx(*roles, project=PROJECT, system_scope=None):
    return oslo_context.RequestContext(user_id="u", project_id=project, roles=list(roles),
                                       system_scope=system_scope)


@pytest.fixture
def conf():
    return get_conf(default_config_files=[])


def _allowed(conf, rule, ctx, project=PROJECT):
    enforcer = policy_mod.make_enforcer(conf)
    return enforcer.authorize(rule, {"project_id": project, "user_id": "u"}, ctx,
                              do_raise=False)


@pytest.mark.parametrize("rule, roles, allowed", [
    (servers.SHOW, ("reader",), True),
    (volume_attachments.INDEX, ("reader",), True),
    (volume_attachments.CREATE, ("reader",), False),
    (volume_attachments.CREATE, ("member", "reader"), True),
    (volume_attachments.DELETE, ("reader",), False),
    (servers.CREATE, ("reader",), False),
    (servers.INDEX_ALL_TENANTS, ("member",), False),
    (servers.INDEX_ALL_TENANTS, ("admin",), True),
    (volume_attachments.SWAP, ("member", "reader"), False),
    (volume_attachments.SWAP, ("service",), True),
    (volume_attachments.SWAP, ("admin",), True),
    (servers.SHOW, (), False),
], ids=lambda value: (value.replace(":", ".") if isinstance(value, str)
                      else "-".join(value) if isinstance(value, tuple) else str(value)))
def test_role_matrix_in_the_owning_project(conf, rule, roles, allowed):
    assert bool(_allowed(conf, rule, _ctx(*roles))) is allowed


def test_another_projects_member_is_refused_and_an_admin_is_not(conf):
    assert not _allowed(conf, servers.SHOW, _ctx("member", "reader", project=OTHER))
    assert _allowed(conf, servers.SHOW, _ctx("admin", project=OTHER))


def test_enforce_new_defaults_false_keeps_the_legacy_owner_rule(conf):
    """A project user without reader/member passes only under the legacy defaults."""
    roleless = _ctx("custom-role")
    assert not _allowed(conf, volume_attachments.CREATE, roleless)
    conf.set_override("enforce_new_defaults", False, group="oslo_policy")
    assert _allowed(conf, volume_attachments.CREATE, roleless)
    assert not _allowed(conf, volume_attachments.CREATE, _ctx("custom-role", project=OTHER))
    # Admin-only and service rules have no legacy form.
    assert not _allowed(conf, volume_attachments.SWAP, roleless)


def test_a_system_scoped_token_is_forbidden_not_a_server_error(conf):
    """Regression: oslo.policy's InvalidScope escaped authorize() and became a 500."""
    app = flask.Flask(__name__)
    app.extensions["volumesvc"] = type("Deps", (), {"enforcer": policy_mod.make_enforcer(conf)})
    with app.test_request_context():
        with pytest.raises(exception.Forbidden):
            policy_mod.authorize(_ctx("admin", "reader", project=None, system_scope="all"),
                                 servers.INDEX, {"project_id": PROJECT})
        policy_mod.authorize(_ctx("admin"), servers.INDEX, {"project_id": PROJECT})
