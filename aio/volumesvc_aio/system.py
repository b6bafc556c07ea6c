"""System packages and users the single-machine setup needs.

The all-in-one installs what a fresh Debian machine lacks (it runs as root
there); on a machine that already has everything it only checks.
"""

import fcntl
import os
import shutil
import subprocess

from oslo_log import log as logging

LOG = logging.getLogger(__name__)

# Debian packages: libvirt's QEMU driver (no libvirtd needed for the embedded
# URI), QEMU itself, qemu-img for Cinder's image conversion, and RabbitMQ.
LIBVIRT_PACKAGES = (
    "libvirt-daemon", "libvirt-daemon-driver-qemu", "qemu-system-x86", "libvirt-clients",
    "libvirt-dev", "pkg-config", "gcc", "qemu-utils",
)
RABBITMQ_PACKAGES = ("rabbitmq-server",)
_APT_LOCK = "/run/lock/volumesvc-apt.lock"


def missing_packages(packages):
    """The subset of ``packages`` dpkg does not report as installed."""
    missing = []
    for name in packages:
        result = subprocess.run(
            ["dpkg-query", "-W", "-f=${Status}", name],
            capture_output=True, text=True, check=False)
        if "install ok installed" not in result.stdout:
            missing.append(name)
    return missing


def apt_install(packages, *, timeout=900):
    """Install Debian packages that are missing; a no-op when none are."""
    missing = missing_packages(packages)
    if not missing:
        return []
    if shutil.which("apt-get") is None or os.geteuid() != 0:
        raise RuntimeError(
            "missing system packages %s: install them as root (apt-get install -y %s)"
            % (", ".join(missing), " ".join(missing)))
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    # Test runs, all-in-ones and clusters on one machine may install at the
    # same moment: one at a time (our lock), and apt waits for any other
    # dpkg user instead of failing at once on its lock.
    wait_lock = ("-o", f"DPkg::Lock::Timeout={int(timeout)}")
    with open(_APT_LOCK, "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        missing = missing_packages(packages)
        if not missing:
            return []
        LOG.info("Installing system packages: %s", " ".join(missing))
        subprocess.run(["apt-get", *wait_lock, "update", "-qq"], check=True, env=env,
                       timeout=timeout)
        subprocess.run(["apt-get", *wait_lock, "install", "-y", "-qq",
                        "--no-install-recommends", *missing],
                       check=True, env=env, timeout=timeout, stdout=subprocess.DEVNULL)
    return missing


def ensure_libvirt_qemu_user():
    """libvirt's QEMU driver refuses to start as root without this user."""
    probe = subprocess.run(["getent", "passwd", "libvirt-qemu"], capture_output=True,
                           check=False)
    if probe.returncode == 0:
        return
    subprocess.run(["useradd", "--system", "--user-group", "--no-create-home",
                    "libvirt-qemu"], check=True)


#: The services' system user and group (the units' User=/Group=).
SERVICE_USER = "volumesvc"
#: The group libvirtd's read-write socket belongs to (libvirtd.py configures
#: it): the compute's way to ``qemu:///system`` without root.
LIBVIRT_GROUP = "libvirt"
#: The privsep contexts an unprivileged compute starts daemons of, by the
#: import path oslo.privsep passes as ``--privsep_context``.
PRIVSEP_CONTEXTS = ("os_brick.privileged.default",
                    "volumesvc.privsep.dac_override_pctxt")


def ensure_group(name):
    """Create system group ``name`` unless it exists; True when created."""
    if subprocess.run(["getent", "group", name], capture_output=True,
                      check=False).returncode == 0:
        return False
    subprocess.run(["groupadd", "--system", name], check=True, timeout=60)
    return True


def ensure_service_user(name=SERVICE_USER, groups=(LIBVIRT_GROUP,), home="/var/lib/volumesvc"):
    """The services' system user (own group, no login), a member of ``groups``.

    What the install guide does by hand (doc/source/install/index.rst);
    the cluster and the tests that run services unprivileged call this. An
    existing user is only added to the groups it lacks.
    """
    for group in groups:
        ensure_group(group)
    if subprocess.run(["getent", "passwd", name], capture_output=True,
                      check=False).returncode != 0:
        subprocess.run(["useradd", "--system", "--user-group", "--no-create-home",
                        "--home-dir", home, "--shell", "/usr/sbin/nologin", name],
                       check=True, timeout=60)
    if groups:
        subprocess.run(["usermod", "--append", "--groups", ",".join(groups), name],
                       check=True, timeout=60)
    return name


def remove_service_user(name):
    """Delete user ``name`` and its own group (a test's throwaway user)."""
    subprocess.run(["userdel", name], capture_output=True, check=False, timeout=60)
    subprocess.run(["groupdel", name], capture_output=True, check=False, timeout=60)


def privsep_sudoers(user, helper, contexts=PRIVSEP_CONTEXTS):
    """sudoers lines letting ``user`` start exactly the compute's privsep daemons as root.

    ``helper``: the daemon's command without sudo and without the
    arguments oslo.privsep appends, as ``volumesvc.privsep.helper_command``
    makes it (``<python> -m oslo_privsep.daemon --config-file <file>``).
    One line per context, so no other context can be started this way;
    only the socket path (a fresh temporary one per start) is a wildcard.
    """
    escaped = "".join("\\" + c if c in ",:=\\" else c for c in helper)
    return "".join(
        f"{user} ALL=(root) NOPASSWD: {escaped} --privsep_context {context} "
        f"--privsep_sock_path *\n" for context in contexts)


def write_sudoers(path, text):
    """Install ``text`` as the sudoers drop-in ``path`` (0440) once visudo accepts it.

    sudo skips drop-ins whose name has a dot: ``/etc/sudoers.d/volumesvc``.
    """
    partial = f"{path}.partial"
    with open(partial, "w", encoding="utf-8") as f:
        f.write(text)
    os.chmod(partial, 0o440)
    checked = subprocess.run(["visudo", "-c", "-q", "-f", partial], capture_output=True,
                             text=True, check=False, timeout=60)
    if checked.returncode != 0:
        os.unlink(partial)
        raise RuntimeError(f"visudo refuses the privsep rules: {checked.stdout}{checked.stderr}")
    os.replace(partial, path)


def ensure_system(*, rabbitmq=True, libvirt=True):
    """Everything the all-in-one and the integration tests need from Debian."""
    packages = []
    if libvirt:
        packages.extend(LIBVIRT_PACKAGES)
    if rabbitmq and shutil.which("rabbitmq-server") is None:
        packages.extend(RABBITMQ_PACKAGES)
    installed = apt_install(packages)
    if libvirt:
        ensure_libvirt_qemu_user()
        ensure_group(LIBVIRT_GROUP)
    return installed


MARIADB_ADMIN_URL = "mysql+pymysql://root@127.0.0.1:3306"


def ensure_mariadb(timeout=60.0):
    """Start the machine's MariaDB if nothing listens on 3306 (it usually runs)."""
    from volumesvc_aio import rabbit, wait_for

    if rabbit.port_open("127.0.0.1", 3306):
        return False
    if not os.path.exists("/usr/sbin/mariadbd"):
        raise RuntimeError("MariaDB is not running on 127.0.0.1:3306 and is not installed "
                           "(apt-get install mariadb-server)")
    subprocess.run(["start-stop-daemon", "--start", "--oknodo", "--background",
                    "--exec", "/usr/sbin/mariadbd"], check=True)
    wait_for(lambda: rabbit.port_open("127.0.0.1", 3306), timeout, what="MariaDB")
    return True


def mariadb_database(name, admin_url=MARIADB_ADMIN_URL, *, fresh=False):
    """Create database ``name`` if missing and return its SQLAlchemy URL.

    ``fresh`` drops it first: a new deployment must not start on rows an
    earlier one left behind under the same name.
    """
    import sqlalchemy as sa

    engine = sa.create_engine(admin_url + "/", isolation_level="AUTOCOMMIT")
    try:
        with engine.connect() as conn:
            if fresh:
                conn.execute(sa.text(f"DROP DATABASE IF EXISTS {name}"))
            conn.execute(sa.text(
                f"CREATE DATABASE IF NOT EXISTS {name} CHARACTER SET utf8mb4"))
    finally:
        engine.dispose()
    return f"{admin_url}/{name}?charset=utf8mb4"
