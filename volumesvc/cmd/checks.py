"""Settings that are fine on one machine and wrong on several: found once, said twice.

The defaults suit the all-in-one: an embedded QEMU driver, software
emulation, a 64 MiB guest, a SQLite file. An operator who takes them to
several hosts gets guests that crawl or a database that two hosts cannot
share, and nothing fails loudly. Each check here names the option to
change; a service logs its findings as WARNINGs when it starts, and
``volumesvc-status upgrade check`` reports the same findings as warnings
(:mod:`volumesvc.cmd.status`), so there is one wording for both.

Only this process's own configuration is read (and, for the database,
the service records): ``volumesvc-status`` on a compute host checks that
host's settings.
"""

import dataclasses
import ipaddress
import os

from oslo_log import log as logging

from volumesvc import binaries

LOG = logging.getLogger(__name__)

EMBED_SCHEME = "qemu:///embed"
KVM_DEVICE = "/dev/kvm"


@dataclasses.dataclass(frozen=True)
class Finding:
    """A setting to change: the option (``[group] name``) and why."""

    option: str
    message: str

    def __str__(self):
        return f"{self.message} (change {self.option})"


def _is_loopback(address: str) -> bool:
    try:
        return ipaddress.ip_address(address).is_loopback
    except ValueError:  # a host name: whatever it resolves to is the operator's call
        return address == "localhost"


def compute_findings(conf, *, kvm_device: str = KVM_DEVICE) -> list[Finding]:
    """What in this compute host's configuration only suits a single machine."""
    findings = []
    if _is_loopback(conf.my_ip):
        findings.append(Finding(
            "[DEFAULT] my_ip",
            f"[DEFAULT] my_ip is {conf.my_ip}: storage backends export volumes to this "
            "address (the connector's 'ip'), which no other host can reach; set it to "
            "this host's address on the storage network"))
    if conf.compute_driver != "libvirt":
        return findings
    lv = conf.libvirt
    if lv.connection_uri.startswith(EMBED_SCHEME):
        findings.append(Finding(
            "[libvirt] connection_uri",
            f"[libvirt] connection_uri is {lv.connection_uri}: QEMU runs inside this "
            "compute process without libvirtd (no Ceph secrets, guests stop with the "
            "agent's libvirt root); use qemu:///system"))
    if lv.virt_type == "qemu":
        findings.append(Finding(
            "[libvirt] virt_type",
            "[libvirt] virt_type is qemu: guests run under software emulation (TCG); "
            "use kvm on hosts with hardware virtualisation"))
    elif not os.path.exists(kvm_device):
        findings.append(Finding(
            "[libvirt] virt_type",
            f"[libvirt] virt_type is kvm but {kvm_device} is missing: guests cannot "
            "start until the kvm module is loaded, or set virt_type = qemu (emulation)"))
    if lv.guest_memory_cap_mb:
        findings.append(Finding(
            "[libvirt] guest_memory_cap_mb",
            f"[libvirt] guest_memory_cap_mb gives no guest more than "
            f"{lv.guest_memory_cap_mb} MiB whatever its flavor says; set it to 0 to give "
            "guests their flavor's memory"))
    return findings


def database_findings(conf, conductor_hosts) -> list[Finding]:
    """SQLite under conductors on more than one host.

    Only conductors (and API nodes, which keep no service record) open the
    database; computes never do, so computes with names of their own (the
    all-in-one's ``--computes N``) on one machine are no reason to warn.
    """
    hosts = sorted(set(conductor_hosts))
    if not conf.database.connection.startswith("sqlite") or len(hosts) < 2:
        return []
    return [Finding(
        "[database] connection",
        f"[database] connection is SQLite but conductors on {len(hosts)} hosts "
        f"({', '.join(hosts)}) use it: a SQLite file cannot be shared between hosts; "
        "use a PostgreSQL or MySQL/MariaDB URL")]


def shared_database_findings(conf) -> list[Finding]:
    """:func:`database_findings` for the conductor records in the database.

    This host counts as well (its conductor may not have beaten yet).
    Raises what reading the records raises (no schema yet).
    """
    if not conf.database.connection.startswith("sqlite"):
        return []
    from volumesvc import context
    from volumesvc.db import api as db_api
    from volumesvc.objects import service as service_obj

    db = db_api.Database(conf)
    try:
        records = service_obj.list_services(db, context.get_admin_context(),
                                            binary=binaries.CONDUCTOR)
    finally:
        db.dispose()
    return database_findings(conf, {s.host for s in records} | {conf.host})


def warn(findings, binary: str) -> None:
    """Log each finding as one WARNING line naming the option to change."""
    for finding in findings:
        LOG.warning("%s: %s", binary, finding)
