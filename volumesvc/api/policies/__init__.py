"""Policy defaults in code, one module per resource (same name as its handler).

``list_rules`` is the ``oslo.policy.policies`` entry point. A new resource
adds its module to ``_MODULES``.
"""

import itertools

from oslo_policy import policy

from volumesvc.api.policies import (
    assisted_volume_snapshots,
    availability_zones,
    base,
    console_output,
    flavors,
    instance_actions,
    ips,
    keypairs,
    metrics,
    migrations,
    quota_sets,
    server_actions,
    server_admin_actions,
    server_evacuate,
    server_external_events,
    server_live_migrate,
    server_metadata,
    server_migrations,
    server_resize,
    server_tags,
    servers,
    services,
    volume_attachments,
)

_MODULES = (base, services, servers, server_actions, flavors, instance_actions,
            volume_attachments, assisted_volume_snapshots, ips, server_external_events,
            server_metadata, server_tags, server_admin_actions, server_live_migrate,
            server_evacuate, keypairs, quota_sets, availability_zones, console_output, metrics,
            migrations, server_migrations, server_resize)


# The 2023 project defaults (reader/member) and the pre-2023 one they replace.
_LEGACY = {base.PROJECT_READER_OR_ADMIN: base.LEGACY_ADMIN_OR_OWNER,
           base.PROJECT_MEMBER_OR_ADMIN: base.LEGACY_ADMIN_OR_OWNER}


def _with_legacy_default(rule):
    """``rule`` with its pre-2023 default as the deprecated rule, as Nova's rules have.

    ``[oslo_policy] enforce_new_defaults = false`` then lets either pass (a
    project user without the reader/member roles keeps working during an
    upgrade); the default (true) enforces only the new check string.
    """
    legacy = _LEGACY.get(rule.check_str)
    if legacy is None or rule.deprecated_rule is not None:
        return rule
    return policy.DocumentedRuleDefault(
        name=rule.name, check_str=rule.check_str, description=rule.description,
        operations=rule.operations, scope_types=rule.scope_types,
        deprecated_rule=policy.DeprecatedRule(
            name=rule.name, check_str=legacy, deprecated_since="2023.1",
            deprecated_reason="Project reader and member roles replace 'any role in the "
                              "project' (Nova's 2023 defaults)."))


def list_rules():
    return [_with_legacy_default(rule)
            for rule in itertools.chain.from_iterable(m.list_rules() for m in _MODULES)]
