"""The adapter to os-brick: connectors, the host's connector properties, privsep.

Every other module reaches os-brick through this one. os-brick runs its
privileged commands in an oslo.privsep daemon whose settings both libraries
read from oslo.config's global object only, so :func:`setup` hands them the
compute's ``[privsep_osbrick]`` and ``[os_brick]`` values once at start
(see doc/source/admin/storage-protocols.rst).
"""

import contextlib
import copy
import threading
import time

import os_brick.privileged  # noqa: F401 - registers [privsep_osbrick] on cfg.CONF
from os_brick import encryptors, initiator
from os_brick import exception as brick_exception
from os_brick.initiator import connector as brick_connector
from oslo_concurrency import processutils
from oslo_config import cfg

from volumesvc import exception, privsep
from volumesvc.conf import privsep as privsep_conf

#: driver_volume_type -> os-brick protocol, for the volumes os-brick turns
#: into a block device on this host.
BLOCK_PROTOCOLS = {
    "iscsi": initiator.ISCSI,
    "iser": initiator.ISER,
    "fibre_channel": initiator.FIBRE_CHANNEL,
    "nvmeof": initiator.NVMEOF,
    "scaleio": initiator.SCALEIO,
    "storpool": initiator.STORPOOL,
    "lightos": initiator.LIGHTOS,
}
#: driver_volume_type -> os-brick protocol, for shares os-brick mounts.
REMOTEFS_PROTOCOLS = {
    "nfs": initiator.NFS,
}


def root_helper():
    """The prefix os-brick is given for running as root (volumesvc.privsep's)."""
    return privsep.root_helper()


def setup(conf):
    """Give os-brick and its privsep context the compute's settings (process-wide)."""
    privsep.apply_settings(conf, privsep_conf.GROUP, privsep_conf.privsep_opts)
    for opt in privsep_conf.brick_opts:
        cfg.CONF.set_override(opt.dest, conf[privsep_conf.BRICK_GROUP][opt.dest],
                              group=privsep_conf.BRICK_GROUP)


def connector_properties(conf):
    """The connector this host sends to Cinder, built by os-brick.

    ``ip`` is ``[DEFAULT] my_ip``; the initiator name, NQN, WWPNs and the
    others come from os-brick's connectors (their privileged reads through
    privsep); ``multipath`` from ``[libvirt] volume_use_multipath``.
    """
    with errors("building the volume connector"):
        return brick_connector.get_connector_properties(
            root_helper(), conf.my_ip, conf.libvirt.volume_use_multipath,
            conf.libvirt.volume_enforce_multipath, host=conf.host)


class ConnectorCache:
    """The host's connector properties, built once and reused for ``max_age`` seconds.

    Why: os-brick builds them from scratch each time, and on a host with the
    iSCSI, NVMe-oF and Fibre Channel tools that is several commands run as
    root through privsep (reading the initiator name, the host NQN, the
    root file system's UUID, ``nvme`` itself) per attachment; in an attach
    storm of the fake driver they were two thirds of the compute's CPU
    (0.035 of 0.054 CPU-s per attach, benchmarks/README.md, 2026-12-05).
    What they read changes with an administrator's hand, not per attach,
    so a copy is reused:

    * for at most ``max_age`` seconds (0: built for every caller, as Nova
      does), so a changed identity reaches Cinder within that time;
    * until :meth:`forget` (an attach failed: the next one asks os-brick
      again, in case stale properties were why);
    * one build at a time: callers arriving while it runs wait for its
      result instead of each starting their own.

    Every caller gets its own copy: Cinder's adapter adds the mountpoint.
    """

    def __init__(self, build, max_age, clock=time.monotonic):
        self._build = build
        self._max_age = max_age
        self._clock = clock
        self._lock = threading.Lock()
        self._value: dict | None = None
        self._built_at = 0.0

    def get(self) -> dict:
        with self._lock:
            if (self._value is None or self._max_age <= 0
                    or self._clock() - self._built_at >= self._max_age):
                self._value = self._build()
                self._built_at = self._clock()
            return copy.deepcopy(self._value)

    def forget(self):
        """Build afresh on the next :meth:`get`."""
        with self._lock:
            self._value = None


def connector(conf, protocol, **kwargs):
    """os-brick's connector object for ``protocol`` (its factory picks the class)."""
    return brick_connector.InitiatorConnector.factory(
        protocol, root_helper(), use_multipath=conf.libvirt.volume_use_multipath,
        device_scan_attempts=conf.libvirt.num_volume_scan_tries, **kwargs)


@contextlib.contextmanager
def errors(what):
    """os-brick's failures as the virt driver's error, with what was being done."""
    try:
        yield
    except (brick_exception.BrickException, processutils.ProcessExecutionError,
            NotImplementedError) as exc:
        raise exception.VirtDriverError(reason=f"{what}: {exc}") from exc


# -- encryptors: dm-crypt on host block devices (virt/libvirt/encryption.py) ------
LUKS, LUKS2, PLAIN = encryptors.LUKS, encryptors.LUKS2, encryptors.PLAIN


def provider_format(provider):
    """Cinder's provider (a format, or an encryptor class name of old) as a format."""
    return encryptors.LEGACY_PROVIDER_CLASS_TO_FORMAT_MAP.get(provider, provider)


class _FetchedKey:
    """os-brick's encryptors ask a key manager for the key: hand them the one already read.

    The key was read through ``volumesvc.keymgr`` (its errors named), so
    os-brick never talks to the key manager itself.
    """

    def __init__(self, key):
        self._key = key

    def get(self, context, key_id, **kwargs):
        return self._key


def encryptor(connection_info, metadata, key=None):
    """os-brick's encryptor for the volume's provider (``key``: castellan's object).

    ``metadata``: Cinder's encryption metadata (never the key), as os-brick
    takes it; its commands run as root through privsep.
    """
    metadata = dict(metadata, provider=provider_format(metadata.get("provider")))
    return encryptors.get_volume_encryptor(root_helper(), connection_info, _FetchedKey(key),
                                           **metadata)
