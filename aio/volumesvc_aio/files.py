"""Files of the all-in-one that hold credentials or volume data: closed to other users.

Why: a file written with ``open(path, "w")`` gets the umask's 0644, so every
local user could read the RabbitMQ, database and Keystone credentials in the
services' configuration, and the guests' disks that the Cinder file backend
keeps as plain files. Configuration holding a credential is written 0600
(every service of the all-in-one runs as the user that wrote it), and a
directory of volume data is 0750: its owner, and the group QEMU runs as when
the operator made QEMU run as another user than root
(:func:`volumesvc_aio.libvirtd.configured_qemu_group`).
"""

import grp
import os

CONFIG_MODE = 0o600
DATA_DIR_MODE = 0o750


def write_private(path, text, mode=CONFIG_MODE):
    """Write ``text`` to ``path``, readable by its owner only, also if the file existed.

    The mode is set before the first byte is written, so the secret is never
    in a file others may read, not even for a moment.
    """
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, mode)
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        os.fchmod(f.fileno(), mode)
        f.write(text)
    return path


def _gid(group):
    """The id of ``group`` (a name, or libvirt's ``+N``), None when there is no such group."""
    if group is None:
        return None
    if group.lstrip("+").isdigit():
        return int(group.lstrip("+"))
    try:
        return grp.getgrnam(group).gr_gid
    except KeyError:
        return None


def private_dir(path, group=None, mode=DATA_DIR_MODE):
    """``path`` as a directory (made when missing) that other users cannot enter.

    ``group``: the group that keeps access (QEMU's, for volume files).
    """
    os.makedirs(path, exist_ok=True)
    os.chmod(path, mode)
    gid = _gid(group)
    if gid is not None and os.stat(path).st_gid != gid:
        os.chown(path, -1, gid)
    return path
