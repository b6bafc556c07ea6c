"""The services as an unprivileged user on a real libvirtd; root only in the privsep daemons.

The API, the conductor and the compute run as a throwaway system user of
this test (``setpriv --init-groups``, so its ``libvirt`` group counts), as
the units run them as ``volumesvc``: the compute reaches ``qemu:///system``
through libvirtd's group-owned socket and starts its privsep daemons
through sudo with the rules ``volumesvc_aio.system.privsep_sudoers`` writes
(those the install guide gives). A server boots from a Cinder volume (a
file of the session's Cinder), a second volume is attached and detached,
and its console log, which virtlogd writes for root only, is read. No
service process is root; the privsep daemons are, each with only its
context's capabilities, and they end with the compute.
"""

import grp
import os
import pathlib
import shutil
import subprocess
import sys
import tempfile
import uuid
import xml.etree.ElementTree as ET

import pytest

from tests.fixtures.deployment import REPO, deploy
from tests.integration.services.helpers import boot, wait
from volumesvc import binaries
from volumesvc_aio import libvirtd, stop_all, system

#: oslo.privsep's capability bits of each context's daemon (CapEff in /proc).
CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH, CAP_SYS_ADMIN = 1, 2, 21
EXPECTED_CAPS = {
    "os_brick.privileged.default": (1 << CAP_SYS_ADMIN) | (1 << CAP_DAC_READ_SEARCH),
    "volumesvc.privsep.dac_override_pctxt": 1 << CAP_DAC_OVERRIDE,
}


def _status(pid):
    """``{field: value}`` of /proc/<pid>/status."""
    with open(f"/proc/{pid}/status", encoding="utf-8") as f:
        return dict(line.rstrip("\n").split(":\t", 1) for line in f if ":\t" in line)


def _uids(pid):
    """The real, effective, saved and file-system uids of ``pid``."""
    return [int(uid) for uid in _status(pid)["Uid"].split()]


def _cmdline(pid):
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return [arg.decode(errors="replace") for arg in f.read().split(b"\0") if arg]
    except (FileNotFoundError, ProcessLookupError):
        return []


def _privsep_daemons(conf_path):
    """``{context: pid}`` of the privsep daemons started with this deployment's config."""
    found = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        argv = _cmdline(entry)
        if ("oslo_privsep.daemon" in argv and conf_path in argv
                and "--privsep_context" in argv and argv[0] != "sudo"):
            found[argv[argv.index("--privsep_context") + 1]] = int(entry)
    return found


def _descendants(pid):
    """``pid`` and every process below it (by /proc's parent ids)."""
    parents = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                parents[int(entry)] = int(_status(entry)["PPid"])
            except (FileNotFoundError, KeyError, ProcessLookupError):
                continue
    tree, grown = {pid}, True
    while grown:
        grown = False
        for child, parent in parents.items():
            if parent in tree and child not in tree:
                tree.add(child)
                grown = True
    return tree


@pytest.fixture
def service_user():
    """A throwaway system user in the libvirt group, and its sudo rules afterwards."""
    name = f"vsit{uuid.uuid4().hex[:8]}"
    system.ensure_service_user(name, groups=(system.LIBVIRT_GROUP,), home="/nonexistent")
    sudoers = f"/etc/sudoers.d/{name}"
    yield name, sudoers
    if os.path.exists(sudoers):
        os.unlink(sudoers)
    system.remove_service_user(name)


@pytest.fixture
def unprivileged(service_user, system_libvirt, cinder_harness, rabbit_vhost, pg_database_url):
    """The three services of a deployment running as ``service_user``."""
    user, sudoers = service_user
    socket = os.stat(libvirtd.LIBVIRTD_SOCKET)
    if (grp.getgrgid(socket.st_gid).gr_name != system.LIBVIRT_GROUP
            or socket.st_mode & 0o060 != 0o060):
        pytest.fail(f"the running libvirtd's socket {libvirtd.LIBVIRTD_SOCKET} is not "
                    f"read-write for the {system.LIBVIRT_GROUP} group: it was started "
                    "without volumesvc_aio.libvirtd's unix_sock_group; stop it and run again")
    state = tempfile.mkdtemp(prefix="vs-unpriv-", dir="/var/tmp")
    shutil.chown(state, user, user)
    os.chmod(state, 0o750)
    conf_path = os.path.join(state, "volumesvc.conf")
    # The daemon's command: the test's code first on its path (sudo clears
    # the environment; the sudo rule names this exact command), then what
    # volumesvc.privsep.helper_command makes.
    helper = (f"/usr/bin/env PYTHONPATH={REPO} {sys.executable} -m oslo_privsep.daemon "
              f"--config-file {conf_path}")
    system.write_sudoers(sudoers, system.privsep_sudoers(user, helper))
    dep = deploy(pathlib.Path(state), rabbit_vhost, pg_database_url, f"""
        [cinder]
        auth_strategy = noauth
        endpoint_override = {cinder_harness.url}
        [libvirt]
        connection_uri = {system_libvirt.uri}
        [privsep_osbrick]
        helper_command = sudo {helper}
        [privsep_volumesvc]
        helper_command = sudo {helper}
        """, start=(), compute_driver="libvirt",
        argv_prefix=["setpriv", f"--reuid={user}", f"--regid={user}", "--init-groups"])
    # The config and the database sync were written as root: the services'
    # user reads the one and owns its state directory.
    shutil.chown(conf_path, user, user)
    try:
        for binary in (binaries.CONDUCTOR, binaries.COMPUTE, binaries.API):
            dep.spawn(binary)
        yield dep
    finally:
        stop_all([c.stop for c in dep.children.values()])
        for pid in _privsep_daemons(dep.conf).values():
            # They end with the compute's socket; any left is ours to stop.
            subprocess.run(["kill", str(pid)], check=False)
        instances = pathlib.Path(state, "instances")
        for entry in (os.listdir(instances) if instances.is_dir() else ()):
            for verb in ("destroy", "undefine"):
                subprocess.run(["virsh", "-c", system_libvirt.uri, verb, entry],
                               capture_output=True, check=False, timeout=60)
        shutil.rmtree(state, ignore_errors=True)


def _domain_serials(uri, server_id):
    xml = subprocess.run(["virsh", "-c", uri, "dumpxml", server_id], capture_output=True,
                         text=True, check=True, timeout=60).stdout
    return {d.findtext("serial") for d in ET.fromstring(xml).findall("./devices/disk")}


def test_unprivileged_services_attach_and_detach_and_only_privsep_is_root(
        unprivileged, cinder_api, system_libvirt):
    from volumesvc.context import RequestContext

    dep = unprivileged
    wait(lambda: dep.compute_state() == "up", "compute up", timeout=120, on_fail=dep.logs)
    server_id = boot(dep)
    ctx = RequestContext(user_id="admin", project_id="admin", is_admin=True, roles=["admin"])
    volume = cinder_api.create(ctx, 1, "unprivileged", "")
    try:
        wait(lambda: cinder_api.get(ctx, volume["id"])["status"] == "available", "available")
        status, body = dep.request("POST", f"/servers/{server_id}/os-volume_attachments",
                                   {"volumeAttachment": {"volumeId": volume["id"]}})
        assert status == 200, (body, dep.logs())
        wait(lambda: cinder_api.get(ctx, volume["id"])["status"] == "in-use", "in-use")
        assert volume["id"] in _domain_serials(system_libvirt.uri, server_id)

        # virtlogd's log is root's: the compute reads it through its daemon.
        log = os.path.join(dep.tmp_path, "instances", server_id, "console.log")
        assert os.stat(log).st_uid == 0 and not os.stat(log).st_mode & 0o004
        status, body = dep.request("POST", f"/servers/{server_id}/action",
                                   {"os-getConsoleOutput": {"length": 10}})
        assert status == 200 and "output" in body, (body, dep.logs())

        status, body = dep.request(
            "DELETE", f"/servers/{server_id}/os-volume_attachments/{volume['id']}")
        assert status == 202, (body, dep.logs())
        wait(lambda: cinder_api.get(ctx, volume["id"])["status"] == "available",
             "available after detach")
        assert volume["id"] not in _domain_serials(system_libvirt.uri, server_id)

        services = {name: child.pid for name, child in dep.children.items()}
        for name, pid in services.items():
            for member in _descendants(pid):
                argv = _cmdline(member)
                if "oslo_privsep.daemon" in argv:
                    continue
                assert 0 not in _uids(member), (name, member, argv, _status(member)["Uid"])
        daemons = _privsep_daemons(dep.conf)
        assert set(daemons) == set(EXPECTED_CAPS), (daemons, dep.logs())
        for context, pid in daemons.items():
            assert pid not in services.values()
            assert _uids(pid) == [0, 0, 0, 0]
            assert int(_status(pid)["CapEff"], 16) == EXPECTED_CAPS[context], context
        # The daemons live as long as the compute's channel to them.
        dep.stop(binaries.COMPUTE)
        wait(lambda: not _privsep_daemons(dep.conf), "privsep daemons gone", timeout=30)
        dep.spawn(binaries.COMPUTE)
    finally:
        dep.request("DELETE", f"/servers/{server_id}")
        wait(lambda: dep.request("GET", f"/servers/{server_id}")[0] == 404, "server deleted",
             timeout=120)
        wait(lambda: cinder_api.get(ctx, volume["id"])["status"] == "available",
             "available before delete")
        cinder_api.delete(ctx, volume["id"])
