"""The policy enforcer (one per app, never global) and the enforcement guard.

Handlers call :func:`authorize` first thing. It records on ``flask.g`` that a
policy was checked; the app's view wrapper fails a request whose handler did
not (keystone's ``_assert_rbac_enforcement_called``), so a forgotten check
shows up as a 500 in the functional tests instead of an open door. Handlers
that are public on purpose are marked with :func:`public`.
"""

import sys

from flask import current_app, g
from oslo_policy import policy as oslo_policy

from volumesvc import exception
from volumesvc.api import policies
from volumesvc.conf import get_conf


def make_enforcer(conf) -> oslo_policy.Enforcer:
    enforcer = oslo_policy.Enforcer(conf)
    enforcer.register_defaults(policies.list_rules())
    return enforcer


def get_enforcer():
    """Entry point for oslopolicy-* tools; they pass their args on sys.argv."""
    args = [arg for arg in sys.argv[1:] if arg.startswith("--config")]
    conf = get_conf(args)
    return make_enforcer(conf)


def authorize(ctx, rule: str, target: dict | None = None):
    """Raise Forbidden unless ``ctx`` passes ``rule`` for ``target``.

    ``target`` defaults to the caller's own project, as in Nova, so project
    scoped rules pass for the caller and admin rules depend on roles only.
    """
    g.policy_enforced = True
    target = target if target is not None else {"project_id": ctx.project_id,
                                                "user_id": ctx.user_id}
    enforcer = current_app.extensions["volumesvc"].enforcer
    try:
        enforcer.authorize(rule, target, ctx, do_raise=True)
    except (oslo_policy.PolicyNotAuthorized, oslo_policy.InvalidScope) as exc:
        # NOTE: InvalidScope (a system- or domain-scoped token on a project
        # API) is not a PolicyNotAuthorized; uncaught it was a 500.
        raise exception.Forbidden(
            f"Policy doesn't allow {rule} to be performed.") from exc


def is_admin(enforcer, ctx) -> bool:
    """Whether ``ctx`` passes ``context_is_admin``: the one source of admin-ness.

    Neither authentication strategy decides it from a role name: an operator
    who redefines ``context_is_admin`` (a different role, a project) changes
    who is an admin everywhere, the handlers' ``is_admin`` checks included,
    as in Nova.
    """
    return bool(enforcer.authorize("context_is_admin",
                                   {"project_id": ctx.project_id, "user_id": ctx.user_id},
                                   ctx, do_raise=False))


def public(func):
    """Mark a handler that deliberately checks no policy (version documents)."""
    func._policy_exempt = True
    return func
