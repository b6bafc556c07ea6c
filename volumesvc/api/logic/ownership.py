"""Whose Cinder volume or snapshot is this? A second line of defence.

Cinder scopes its answers to the caller's project, so with keystone a
project never sees another's volume. A Cinder that treats every caller as
an admin (``noauth``, or a service token with too wide a role) answers for
any volume, and the attach or boot would then hand project A's volume to
project B's server. volumesvc therefore checks the owner Cinder reports
itself before any attach or boot that uses a volume or snapshot: another
project's resource is treated exactly as an unknown one. Admins are exempt,
as in Cinder; a volume whose owner Cinder does not report is left to
Cinder's own scoping.
"""

from volumesvc import exception

VOLUME_OWNER = "os-vol-tenant-attr:tenant_id"
SNAPSHOT_OWNER = "os-extended-snapshot-attributes:project_id"


def _foreign(context, owner) -> bool:
    return bool(owner) and not context.is_admin and owner != context.project_id


def check_volume(context, volume: dict) -> dict:
    """``volume`` when the caller's project owns it (or is admin); else VolumeNotFound."""
    if _foreign(context, volume.get(VOLUME_OWNER)):
        raise exception.VolumeNotFound(volume_id=volume.get("id"))
    return volume


def check_snapshot(context, snapshot: dict) -> dict:
    """``snapshot`` when the caller's project owns it (or is admin); else SnapshotNotFound."""
    if _foreign(context, snapshot.get(SNAPSHOT_OWNER)):
        raise exception.SnapshotNotFound(snapshot_id=snapshot.get("id"))
    return snapshot
