"""What the functional tests of moves between two computes share.

Each compute of :class:`tests.functional.stack.Stack` has its own fake
libvirt daemon, so a server's domain is on exactly one of them; FakeCinder
records which host's connector each attachment was given.
"""


class Killed(BaseException):
    """The compute process dying: no handler of the step runs any more."""


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


def attach_new(stack, server):
    """A new 1 GB volume attached to ``server``, once Cinder has it ``in-use``; its id."""
    ctx = stack.context()
    volume = stack.cinder.create(ctx, 1, "data", "")
    stack.attach_volume(server, volume["id"])
    stack.wait(lambda: stack.cinder.get(ctx, volume["id"])["status"] == "in-use",
               what="in-use")
    return volume["id"]
