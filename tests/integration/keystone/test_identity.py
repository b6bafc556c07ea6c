"""The security boundary with a real Keystone: 401s, project isolation, roles, service role.

Each test states the request and the answer an operator's deployment gives;
none of it runs under noauth2, where every token is trusted.
"""

import pytest

from tests.integration.keystone.conftest import cinder_for, wait_volume_status


def _attach_body(volume_id):
    return {"volumeAttachment": {"volumeId": volume_id}}


@pytest.fixture
def demo_volume(kaio, token):
    """An available 1 GiB volume of project demo (made by its member)."""
    cinder = cinder_for(kaio, token("demo", "demo"))
    volume = cinder.volumes.create(1, name="ks-attach")
    wait_volume_status(cinder, volume.id, "available")
    yield volume.id
    try:
        wait_volume_status(cinder, volume.id, "available")
        cinder.volumes.delete(volume.id)
    except BaseException:  # noqa: BLE001 - cleanup only
        pass


def test_no_token_and_bad_token_are_401_with_keystone_uri(kaio, compute):
    for token in (None, "not-a-token"):
        status, headers, body = compute("GET", "/servers", token)
        assert status == 401, (token, status, body)
        challenge = headers["WWW-Authenticate"]
        assert challenge.startswith("Keystone uri=") and kaio.identity_url in challenge, \
            challenge
        assert body["unauthorized"]["code"] == 401


def test_a_valid_token_lists_the_callers_servers(compute, token, demo_server):
    status, _, body = compute("GET", "/servers", token("demo", "demo"))
    assert status == 200
    assert demo_server in [s["id"] for s in body["servers"]]


def test_another_project_cannot_see_or_touch_the_server(compute, token, other_project,
                                                        demo_server, demo_volume):
    other = token(*other_project)
    status, _, body = compute("GET", "/servers", other)
    assert status == 200 and body["servers"] == []
    for method, path, body in (
            ("GET", f"/servers/{demo_server}", None),
            ("DELETE", f"/servers/{demo_server}", None),
            ("GET", f"/servers/{demo_server}/os-volume_attachments", None),
            ("POST", f"/servers/{demo_server}/os-volume_attachments",
             _attach_body(demo_volume))):
        status, _, answer = compute(method, path, other, body)
        assert status == 404, (method, path, status, answer)
    # And the server is still there for its owner.
    status, _, _ = compute("GET", f"/servers/{demo_server}", token("demo", "demo"))
    assert status == 200


def test_reader_may_read_but_not_attach_and_member_may_attach(
        kaio, compute, token, demo_server, demo_volume):
    reader, member = token("demo-reader", "demo"), token("demo", "demo")
    status, _, body = compute("GET", f"/servers/{demo_server}", reader)
    assert status == 200, body
    status, _, body = compute("GET", f"/servers/{demo_server}/os-volume_attachments", reader)
    assert status == 200, body

    path = f"/servers/{demo_server}/os-volume_attachments"
    status, _, body = compute("POST", path, reader, _attach_body(demo_volume))
    assert status == 403, body
    assert "os_compute_api:os-volumes-attachments:create" in body["forbidden"]["message"]

    status, _, body = compute("POST", path, member, _attach_body(demo_volume))
    assert status == 200, body
    cinder = cinder_for(kaio, member)
    wait_volume_status(cinder, demo_volume, "in-use")
    status, _, body = compute("DELETE", f"{path}/{demo_volume}", reader)
    assert status == 403, body
    status, _, body = compute("DELETE", f"{path}/{demo_volume}", member)
    assert status == 202, body
    wait_volume_status(cinder, demo_volume, "available")


def test_swap_is_for_the_service_user_only(kaio, compute, token, demo_server, demo_volume):
    """Cinder's volume-migration call (swap) needs the service role or admin, as in Nova.

    A member gets 403 from the policy; the ``cinder`` service user passes the
    policy and gets the 409 that says volumesvc does not swap yet.
    """
    admin_view = token("admin", "admin")
    status, _, body = compute("GET", f"/servers/{demo_server}/os-volume_attachments",
                              admin_view)
    root_volume = body["volumeAttachments"][0]["volumeId"]
    path = f"/servers/{demo_server}/os-volume_attachments/{root_volume}"
    status, _, body = compute("PUT", path, token("demo", "demo"), _attach_body(demo_volume))
    assert status == 403, body
    assert "os_compute_api:os-volumes-attachments:swap" in body["forbidden"]["message"]
    status, _, body = compute("PUT", path, token("cinder", "service"),
                              _attach_body(demo_volume))
    assert status == 409, body
