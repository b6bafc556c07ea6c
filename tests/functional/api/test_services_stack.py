"""os-services over the whole service: what deleting a compute may not strand."""

import pytest

from tests.functional.stack import BLANK_ROOT as ROOT


def _compute(stack):
    _, body, _ = stack.api("GET", "/os-services?binary=volumesvc-compute", version="2.53",
                           status=200)
    (service,) = body["services"]
    return service


@pytest.mark.parametrize("version", ["2.1", "2.53"])
def test_a_compute_hosting_an_instance_is_not_deleted(stack, version):
    server = stack.boot(stack.context(), ROOT)
    stack.wait_instance(server, "active")
    service = _compute(stack)
    service_id = service["id"]
    if version == "2.1":
        _, legacy, _ = stack.api("GET", "/os-services?binary=volumesvc-compute", status=200)
        service_id = legacy["services"][0]["id"]

    _, fault, _ = stack.api("DELETE", f"/os-services/{service_id}", version=version,
                            status=409)
    assert fault == {"conflictingRequest": {
        "code": 409, "message": "Unable to delete compute service that is hosting "
        "instances. Migrate or delete the instances first."}}
    assert _compute(stack)["id"] == service["id"]

    stack.api("DELETE", f"/servers/{server}", token="u1:p1", status=204)
    stack.wait_for_server_gone(server)
    stack.api("DELETE", f"/os-services/{service_id}", version=version, status=204)
    _, body, _ = stack.api("GET", "/os-services?binary=volumesvc-compute", version="2.53",
                           status=200)
    # The compute is still running: its next heartbeat records it afresh.
    assert all(s["id"] != service["id"] for s in body["services"])
