"""Quotas counted from the database, as Nova's counting quota driver does.

Why counting rather than reservations: usage is never stored, so it can
never drift from the rows it describes (no ``quota_usages`` to resync). A
limit is a row of ``quotas`` (per project) or ``project_user_quotas`` (per
user inside a project); no row means the ``[quota]`` default.

Why a lock row: counting and inserting are two statements, and two boots of
one project that each count before either inserts would both see room. Every
check that may add usage runs inside the writer transaction that adds it,
after :func:`lock_project` took the project's ``quota_locks`` row with
``SELECT ... FOR UPDATE`` (SQLite's ``BEGIN IMMEDIATE`` already serialises
writers). The next boot of the project waits for the lock and then counts
the rows the first one committed. On MariaDB the counts are locking reads:
at REPEATABLE READ a plain read could see a snapshot older than the lock.

Resources: ``instances`` counts the project's live servers; ``cores`` and
``ram`` sum their flavors, except for servers shelved and offloaded (they
hold no host), which is why unshelving checks them again.
"""

import types

import sqlalchemy as sa
from oslo_db import exception as db_exc

from volumesvc import exception
from volumesvc.common import unified_limits
from volumesvc.conf import quota as quota_conf
from volumesvc.db import models
from volumesvc.states import task_states, vm_states

RESOURCES = quota_conf.RESOURCES
# The resources counted per project (and per user) from the instances table.
INSTANCE_RESOURCES = ("instances", "cores", "ram")
UNLIMITED = -1


def unified(conf) -> bool:
    """Whether instances, cores and ram limits are Keystone's unified limits."""
    return conf.quota.driver == quota_conf.UNIFIED_LIMITS


def defaults(conf) -> dict:
    """The ``[quota]`` limits (Keystone's registered limits in unified mode)."""
    values = {name: getattr(conf.quota, name) for name in RESOURCES}
    if unified(conf):
        values.update(unified_limits.registered_limits(conf))
    return values


def keystone_limits(conf, project_id) -> dict | None:
    """The project's instances/cores/ram limits from Keystone, or None in database mode.

    Read before the project's lock is taken (a call to Keystone must not
    hold it) and passed to :func:`allowed_instances`.
    """
    return unified_limits.project_limits(conf, project_id) if unified(conf) else None


def _rows(session, model, **filters) -> dict:
    statement = sa.select(model.resource, model.hard_limit)
    for key, value in filters.items():
        statement = statement.where(getattr(model, key) == value)
    return {resource: limit for resource, limit in session.execute(statement)
            if resource in RESOURCES}


def limits(db, context, conf, project_id, user_id=None) -> dict:
    """The limits of a project, or of one user in it (theirs, else the project's).

    In unified mode there are no per-user limits: the project's from Keystone.
    """
    if unified(conf):
        values = {name: getattr(conf.quota, name) for name in RESOURCES}
        values.update(unified_limits.project_limits(conf, project_id))
        return values
    with db.reader(context) as session:
        return _limits(session, conf, project_id, user_id)


def _limits(session, conf, project_id, user_id=None) -> dict:
    values = defaults(conf)
    values.update(_rows(session, models.Quota, project_id=project_id))
    if user_id is not None:
        values.update(_rows(session, models.ProjectUserQuota, project_id=project_id,
                            user_id=user_id))
    return values


def _locking(session, statement):
    if session.get_bind().dialect.name in ("mysql", "mariadb"):
        return statement.with_for_update(read=True)
    return statement


def _holds_a_host(vm_state, task_state) -> bool:
    """False for a server shelved and offloaded that is not being unshelved."""
    return not (vm_state == vm_states.SHELVED_OFFLOADED
                and task_state != task_states.UNSHELVING)


def _instance_usage(session, project_id, user_id=None) -> dict:
    model = models.Instance
    statement = sa.select(model.flavor, model.vm_state, model.task_state).where(
        model.project_id == project_id, model.deleted == 0)
    if user_id is not None:
        statement = statement.where(model.user_id == user_id)
    usage = dict.fromkeys(INSTANCE_RESOURCES, 0)
    for flavor, vm_state, task_state in session.execute(_locking(session, statement)):
        usage["instances"] += 1
        if _holds_a_host(vm_state, task_state):
            usage["cores"] += int((flavor or {}).get("vcpus") or 0)
            usage["ram"] += int((flavor or {}).get("memory_mb") or 0)
    return usage


def _key_pair_count(session, user_id) -> int:
    statement = sa.select(sa.func.count()).select_from(models.KeyPair).where(
        models.KeyPair.user_id == user_id)
    return session.execute(_locking(session, statement)).scalar_one()


def usage(db, context, project_id, user_id=None) -> dict:
    """What a project (or a user in it) uses: instances, cores, ram (and key_pairs for a user)."""
    with db.reader(context) as session:
        used = dict.fromkeys(RESOURCES, 0)
        used.update(_instance_usage(session, project_id, user_id))
        if user_id is not None:
            used["key_pairs"] = _key_pair_count(session, user_id)
        return used


def ensure_lock_row(db, context, project_id) -> None:
    """Create the project's lock row once (in its own transaction, before any check).

    NOTE: not inside the checking transaction: on SQLite a second writer
    there would wait for the first one's lock on the whole file.
    """
    with db.reader(context) as session:
        if session.get(models.QuotaLock, project_id) is not None:
            return
    try:
        with db.writer(context) as session:
            session.add(models.QuotaLock(project_id=project_id))
    except (db_exc.DBDuplicateEntry, sa.exc.IntegrityError):
        pass  # another request created it first: all that matters is that it exists.


def lock_project(session, project_id) -> None:
    """Hold the project's lock row until the current transaction ends."""
    session.execute(sa.select(models.QuotaLock.project_id)
                    .where(models.QuotaLock.project_id == project_id).with_for_update())


def _headroom(limit, used):
    return None if limit < 0 else limit - used


def allowed_instances(session, conf, project_id, user_id, flavor, min_count, max_count,
                      resources=INSTANCE_RESOURCES, keystone=None) -> int:
    """How many of ``max_count`` servers of ``flavor`` fit; TooManyInstances below ``min_count``.

    Call with the project locked (:func:`lock_project`) in the transaction
    that then writes the servers. Both the project's limits and the user's
    (where the user has limits of their own) must hold. ``keystone``: the
    project's limits from :func:`keystone_limits` in unified mode (then
    there are no user limits).
    """
    per_instance = {"instances": 1, "cores": flavor.vcpus, "ram": flavor.memory_mb}
    scopes = [(keystone if keystone is not None else _limits(session, conf, project_id),
               _instance_usage(session, project_id))]
    if keystone is None and _rows(session, models.ProjectUserQuota, project_id=project_id,
                                  user_id=user_id):
        scopes.append((_limits(session, conf, project_id, user_id),
                       _instance_usage(session, project_id, user_id)))
    allowed = max_count
    for limit, used in scopes:
        for resource in resources:
            room = _headroom(limit[resource], used[resource])
            if room is None or per_instance[resource] <= 0:
                continue
            fits = max(room, 0) // per_instance[resource]
            if fits < min_count:
                raise exception.TooManyInstances(
                    overs=resource, req=per_instance[resource] * min_count,
                    used=used[resource], allowed=limit[resource])
            allowed = min(allowed, fits)
    return allowed


def check_key_pairs(session, conf, user_id) -> None:
    """KeypairLimitExceeded when one more key pair would pass the user's limit."""
    limit = conf.quota.key_pairs
    if limit >= 0 and _key_pair_count(session, user_id) + 1 > limit:
        raise exception.KeypairLimitExceeded()


def set_limits(db, context, project_id, values: dict, user_id=None) -> None:
    """Store limits (resource → int) for the project, or for one user in it."""
    model = models.Quota if user_id is None else models.ProjectUserQuota
    scope = {"project_id": project_id}
    if user_id is not None:
        scope["user_id"] = user_id
    with db.writer(context) as session:
        existing = {row.resource: row for row in session.scalars(
            sa.select(model).filter_by(**scope))}
        for resource, limit in values.items():
            if resource in existing:
                existing[resource].hard_limit = limit
            else:
                session.add(model(resource=resource, hard_limit=limit, **scope))


def delete_limits(db, context, project_id, user_id=None) -> None:
    """Back to the defaults: drop the project's rows (and its users'), or one user's."""
    with db.writer(context) as session:
        session.execute(sa.delete(models.ProjectUserQuota).where(
            models.ProjectUserQuota.project_id == project_id,
            *([models.ProjectUserQuota.user_id == user_id] if user_id is not None else [])))
        if user_id is None:
            session.execute(sa.delete(models.Quota).where(
                models.Quota.project_id == project_id))


def check_unshelve(db, context, conf, instance) -> None:
    """TooManyInstances when unshelving ``instance`` would pass its project's cores or ram.

    Call inside the writer transaction that moves the instance to
    ``unshelving`` (from then on it counts again): the lock is taken here.
    """
    if instance.vm_state != vm_states.SHELVED_OFFLOADED:
        return  # still on its host: it never stopped counting.
    flavor = instance.flavor or {}
    sizes = types.SimpleNamespace(vcpus=int(flavor.get("vcpus") or 0),
                                  memory_mb=int(flavor.get("memory_mb") or 0))
    keystone = keystone_limits(conf, instance.project_id)
    with db.writer(context) as session:
        lock_project(session, instance.project_id)
        allowed_instances(session, conf, instance.project_id, instance.user_id, sizes, 1, 1,
                          resources=("cores", "ram"), keystone=keystone)


def check_resize(db, context, conf, instance, old_flavor, new_flavor) -> None:
    """TooManyInstances when going from ``old_flavor`` to ``new_flavor`` would pass a limit.

    As Nova: only a growth is counted (a resize to a smaller flavor, or
    the revert of a resize to a bigger one, frees room and is never
    refused), and only the difference: the server already counts its
    flavor. Called before a resize and before a revert (the other way).
    """
    sizes = types.SimpleNamespace(
        vcpus=max(int(new_flavor.get("vcpus") or 0) - int(old_flavor.get("vcpus") or 0), 0),
        memory_mb=max(int(new_flavor.get("memory_mb") or 0)
                      - int(old_flavor.get("memory_mb") or 0), 0))
    if not sizes.vcpus and not sizes.memory_mb:
        return
    keystone = keystone_limits(conf, instance.project_id)
    with db.writer(context) as session:
        lock_project(session, instance.project_id)
        allowed_instances(session, conf, instance.project_id, instance.user_id, sizes, 1, 1,
                          resources=("cores", "ram"), keystone=keystone)
