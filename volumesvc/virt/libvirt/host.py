"""The libvirt connection: opening it, keeping it alive, and its events.

With guest.py, the only module that touches the libvirt binding. The binding
is injected (``libvirt_module``) so the ``fake`` compute driver and tests hand
in ``volumesvc.virt.fake.FakeLibvirt`` instead of patching by dotted path;
``None`` means the real ``libvirt``.
"""

import os
import pwd
import threading
import time
import urllib.parse

from oslo_log import log as logging

from volumesvc import exception
from volumesvc.virt.libvirt import guest as guest_mod

LOG = logging.getLogger(__name__)

QEMU_USER = "libvirt-qemu"
# NOTE: root inside the embedded driver: no daemon that could drop privileges,
# no DAC/AppArmor relabelling, and QEMU's stdio to files instead of virtlogd.
EMBED_QEMU_CONF = """\
# Written by volumesvc: embedded QEMU driver for one compute agent.
user = "root"
group = "root"
stdio_handler = "file"
security_driver = "none"
"""

# The event implementation is process-wide in libvirt: register it once per
# binding and run one loop thread for it.
_EVENT_LOCK = threading.Lock()
_EVENT_LOOPS: set[int] = set()  # id() of each libvirt binding


def import_libvirt():
    try:
        import libvirt
    except ImportError as exc:  # pragma: no cover - depends on the machine
        raise exception.HypervisorUnavailable(
            reason="libvirt-python is not installed (pip install libvirt-python, "
                   "needs libvirt-dev and pkg-config to build)") from exc
    return libvirt


def embed_root(uri):
    """The ``root`` of a ``qemu:///embed?root=DIR`` URI, else None."""
    parsed = urllib.parse.urlparse(uri)
    if parsed.scheme != "qemu" or parsed.path != "/embed":
        return None
    roots = urllib.parse.parse_qs(parsed.query).get("root")
    if not roots:
        raise exception.ConfigInvalid(reason=f"{uri}: embed URI needs ?root=DIR")
    return roots[0]


def prepare_embed_root(root):
    """Create DIR/etc/qemu.conf unless the operator already wrote one."""
    etc = os.path.join(root, "etc")
    os.makedirs(etc, exist_ok=True)
    path = os.path.join(etc, "qemu.conf")
    if not os.path.exists(path):
        with open(path, "w", encoding="utf-8") as f:
            f.write(EMBED_QEMU_CONF)


def check_qemu_user(getpwnam=pwd.getpwnam):
    """libvirt's QEMU driver refuses to start as root without this user."""
    try:
        getpwnam(QEMU_USER)
    except KeyError:
        raise exception.HypervisorUnavailable(
            reason=f"user {QEMU_USER!r} does not exist; libvirt's QEMU driver needs it even "
                   f"when running QEMU as root: useradd --system --user-group "
                   f"--no-create-home {QEMU_USER}") from None


def _start_event_loop(libvirt):
    with _EVENT_LOCK:
        if id(libvirt) in _EVENT_LOOPS:
            return
        libvirt.virEventRegisterDefaultImpl()

        def run():
            while True:
                try:
                    libvirt.virEventRunDefaultImpl()
                except Exception:  # keep the loop alive whatever one callback did
                    LOG.exception("libvirt event loop iteration failed")
                    time.sleep(1)

        threading.Thread(target=run, name="libvirt-events", daemon=True).start()
        _EVENT_LOOPS.add(id(libvirt))


class Host:
    """Owns one connection per URI; reopens it when it was lost."""

    def __init__(self, uri, libvirt_module=None, keepalive_interval=5, keepalive_count=5):
        self.uri = uri
        self._real = libvirt_module is None
        self.libvirt = import_libvirt() if libvirt_module is None else libvirt_module
        self._keepalive = (keepalive_interval, keepalive_count)
        self._conn = None
        self._lock = threading.Lock()
        self._waiters_lock = threading.Lock()
        self._removed_waiters = {}  # (domain uuid, alias) -> threading.Event

    # -- connection -------------------------------------------------------
    def _open(self):
        root = embed_root(self.uri)
        if self._real and self.uri.startswith("qemu"):
            check_qemu_user()
        if root and self._real:
            prepare_embed_root(root)
        # NOTE: the embedded driver dispatches QEMU monitor events through the
        # default event loop; without it domain start-up never completes.
        _start_event_loop(self.libvirt)
        # NOTE: libvirt prints every error to stderr unless a handler is set;
        # we raise them as exceptions instead.
        self.libvirt.registerErrorHandler(lambda _ctx, _err: None, None)
        try:
            conn = self.libvirt.open(self.uri)
        except self.libvirt.libvirtError as exc:
            raise exception.HypervisorUnavailable(
                reason=f"cannot open {self.uri}: {exc}") from exc
        interval, count = self._keepalive
        if root is None and interval and "://" in self.uri and not self.uri.startswith(
                ("qemu:///", "test:///")):
            conn.setKeepAlive(interval, count)
        conn.domainEventRegisterAny(
            None, self.libvirt.VIR_DOMAIN_EVENT_ID_DEVICE_REMOVED,
            self._device_removed_cb, None)
        try:
            conn.registerCloseCallback(self._close_cb, None)
        except self.libvirt.libvirtError:
            pass  # embedded connections cannot be closed from the other side
        LOG.info("Connected to libvirt at %s", self.uri)
        return conn

    def get_connection(self):
        with self._lock:
            if self._conn is not None:
                try:
                    if self._conn.isAlive():
                        return self._conn
                except self.libvirt.libvirtError:
                    pass
                LOG.warning("libvirt connection to %s lost; reconnecting", self.uri)
                self._conn = None
            self._conn = self._open()
            return self._conn

    def close(self):
        with self._lock:
            if self._conn is not None:
                try:
                    self._conn.close()
                except self.libvirt.libvirtError:
                    LOG.warning("Closing the libvirt connection failed", exc_info=True)
                self._conn = None

    def _close_cb(self, _conn, reason, _opaque):
        LOG.warning("libvirt closed the connection to %s (reason %s)", self.uri, reason)
        self._conn = None

    # -- events -----------------------------------------------------------
    def _device_removed_cb(self, _conn, dom, dev_alias, _opaque):
        with self._waiters_lock:
            event = self._removed_waiters.get((dom.UUIDString(), dev_alias))
        if event is not None:
            event.set()

    def expect_device_removed(self, uuid, alias):
        """Register interest *before* the detach call so the event cannot be missed."""
        event = threading.Event()
        with self._waiters_lock:
            self._removed_waiters[(uuid, alias)] = event
        return event

    def forget_device_removed(self, uuid, alias):
        with self._waiters_lock:
            self._removed_waiters.pop((uuid, alias), None)

    # -- domains ----------------------------------------------------------
    def _guest(self, dom):
        return guest_mod.Guest(dom, self.libvirt)

    def get_guest(self, uuid):
        try:
            return self._guest(self.get_connection().lookupByUUIDString(uuid))
        except self.libvirt.libvirtError as exc:
            if exc.get_error_code() == self.libvirt.VIR_ERR_NO_DOMAIN:
                raise exception.InstanceNotFound(instance_id=uuid) from None
            raise

    def find_guest(self, uuid):
        try:
            return self.get_guest(uuid)
        except exception.InstanceNotFound:
            return None

    def list_guests(self):
        return [self._guest(d) for d in self.get_connection().listAllDomains(0)]

    def define_guest(self, xml):
        return self._guest(self.get_connection().defineXML(xml))
