"""createImage that the real Glance refuses, with the real Cinder: nothing is left behind.

Glance 33 answers 403 to an image with a property in its reserved
``os_glance_`` namespace, after volumesvc has asked Cinder for a snapshot of
the root volume. The snapshot is still ``creating`` then, and Cinder deletes
only ``available`` or ``error`` snapshots: the undo must wait for it. Before
that, each such request left an ``available`` snapshot for good (and the
root volume could no longer be deleted with its server), and the 403 carried
Glance's HTML page as its message.
"""

from tests.integration.services.helpers import boot, wait
from volumesvc.context import RequestContext


def _deploy(make_deployment, cinder_harness, glance_harness):
    return make_deployment(f"""
        [cinder]
        auth_strategy = noauth
        endpoint_override = {cinder_harness.url}
        [glance]
        auth_strategy = noauth
        endpoint_override = {glance_harness.url}
        """)


def _snapshots_of(cinder_api, ctx, volume_id):
    """Every snapshot of the volume, whatever its status: (id, status) pairs."""
    listed = cinder_api.client(ctx).volume_snapshots.list(
        search_opts={"all_tenants": 1, "volume_id": volume_id})
    return [(s.id, s.status) for s in listed]


def test_refused_create_image_leaves_no_snapshot_and_a_plain_fault(
        make_deployment, cinder_harness, glance_harness, cinder_api):
    dep = _deploy(make_deployment, cinder_harness, glance_harness)
    wait(lambda: dep.compute_state() == "up", "compute up", timeout=60)
    server_id = boot(dep)
    _, body = dep.request("GET", f"/servers/{server_id}/os-volume_attachments")
    (root_id,) = [a["volumeId"] for a in body["volumeAttachments"]]
    ctx = RequestContext(user_id="admin", project_id="admin", is_admin=True, roles=["admin"])

    for attempt in range(2):
        status, body = dep.request("POST", f"/servers/{server_id}/action", {
            "createImage": {"name": f"refused-{attempt}",
                            "metadata": {"os_glance_foo": "1"}}}, version="2.45")
        assert status == 403, (body, dep.logs())
        message = body["forbidden"]["message"]
        assert message.startswith("Glance refused the request: ") and "os_glance_foo" in message
        assert "<" not in message and "\n" not in message, message
        # The undo deleted the snapshot (Cinder may still be finishing the delete).
        assert all(state == "deleting" for _id, state in
                   _snapshots_of(cinder_api, ctx, root_id)), dep.logs()
        wait(lambda: _snapshots_of(cinder_api, ctx, root_id) == [], "no snapshot left")

    # With no snapshot left the root volume goes with its server.
    assert dep.request("DELETE", f"/servers/{server_id}")[0] == 204
    wait(lambda: dep.request("GET", f"/servers/{server_id}")[0] == 404, "server gone")

    def root_gone():
        try:
            cinder_api.get(ctx, root_id)
        except Exception:  # noqa: BLE001 - VolumeNotFound: deleted
            return True
        return False
    wait(root_gone, "root volume deleted")
