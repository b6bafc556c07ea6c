"""What the functional tests of moves between two computes share.

Each compute of :class:`tests.functional.stack.Stack` has its own fake
libvirt daemon, so a server's domain is on exactly one of them; FakeCinder
records which host's connector each attachment was given.
"""

from tests.functional.killing import Killed  # noqa: F401 - the moves' tests raise it
from tests.functional.stack import BLANK_ROOT
from volumesvc.objects import instance as instance_obj


def restart(stack, host):
    """Stop the compute of ``host`` and start it again on the same driver (its
    domains outlive the agent, as QEMU processes outlive a killed compute)."""
    driver = stack.computes[host].manager.driver
    stack.computes.pop(host).stop()
    stack.add_compute(host, driver=driver)


def domains(stack, host):
    return set(stack.computes[host].manager.driver.list_instance_uuids())


def attachments(stack, server):
    """{attachment id: host its connector named (None: not connected)} of the server."""
    return {a["id"]: a.get("host") or (a.get("connector") or {}).get("host")
            for a in stack.cinder.attachments.values() if a["instance"] == server}


def boot(stack, host, bdms=BLANK_ROOT):
    """A server ACTIVE on ``host`` (2.74's host); its id."""
    uuid = stack.boot(stack.context(), bdms, host=host)
    stack.wait_instance(uuid, "active")
    assert instance_obj.get_by_uuid(stack.db, stack.admin_context(), uuid).host == host
    return uuid


def attach_new(stack, server, volume_type=None):
    """A new 1 GB volume attached to ``server``, once Cinder has it ``in-use``; its id."""
    ctx = stack.context()
    volume = stack.cinder.create(ctx, 1, "data", "", volume_type=volume_type)
    stack.attach_volume(server, volume["id"])
    stack.wait(lambda: stack.cinder.get(ctx, volume["id"])["status"] == "in-use",
               what="in-use")
    return volume["id"]
