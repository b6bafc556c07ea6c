"""Helpers of the services tier's real-process tests (API, conductor, compute, real Cinder).

Shared here so that no test module imports another.
"""

import pytest

import volumesvc_aio as harness


def wait(predicate, what, timeout=90, on_fail=None):
    """``on_fail()``: what a timeout reports besides (a deployment's ``logs``)."""
    return harness.wait_for(predicate, timeout, what=what, interval=0.5, on_fail=on_fail)


def boot(dep, name="att", timeout=90):
    """An ACTIVE server on a blank 1 GiB root volume; returns its id."""
    status, body = dep.request("POST", "/servers", {"server": {
        "name": name, "flavorRef": "42", "networks": "none",
        "block_device_mapping_v2": [{"source_type": "blank", "destination_type": "volume",
                                     "boot_index": 0, "volume_size": 1,
                                     "delete_on_termination": True}]}}, version="2.67")
    assert status == 202, (body, dep.logs())
    server_id = body["server"]["id"]

    def active():
        _, show = dep.request("GET", f"/servers/{server_id}")
        if show["server"]["status"] == "ERROR":
            # pytest.fail is not an Exception, so wait_for does not swallow it.
            pytest.fail(f"server went ERROR: {show['server'].get('fault')}\n{dep.logs()}")
        return show["server"]["status"] == "ACTIVE"
    wait(active, "server ACTIVE", timeout)
    return server_id


def cinder_attachments(cinder_api, ctx, volume_id):
    return [a for a in cinder_api.attachment_get_all(ctx, volume_id=volume_id)]


def bdm_volume_ids(dep, server_id):
    _, body = dep.request("GET", f"/servers/{server_id}/os-volume_attachments",
                          version="2.89")
    return {a["volumeId"]: a for a in body["volumeAttachments"]}


def server_and_volume(dep, cinder_api, name):
    """An ACTIVE server and an ``available`` 1 GiB volume: (server id, admin ctx, volume)."""
    from volumesvc.context import RequestContext

    harness.wait_for(lambda: dep.compute_state() == "up", 60, what="compute up")
    server_id = boot(dep)
    ctx = RequestContext(user_id="admin", project_id="admin", is_admin=True,
                         roles=["admin"])
    volume = cinder_api.create(ctx, 1, name, "")
    wait(lambda: cinder_api.get(ctx, volume["id"])["status"] == "available", "available")
    return server_id, ctx, volume
