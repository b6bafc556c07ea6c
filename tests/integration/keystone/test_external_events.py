"""Who may post external events, decided by the roles a real Keystone token carries.

``POST /os-server-external-events`` is how Cinder tells us a volume grew
(``volume-extended``) and Neutron that a port changed: Nova's default lets
only the ``service`` role (or an admin) post them, since an event makes the
compute act on a server. Under noauth2 every caller may have any role, so
only a Keystone token shows that a project member is refused and the
``cinder`` service user (``service`` and ``admin`` on project service, as
the all-in-one makes it and as Cinder's ``[nova]`` section logs in) is not.
"""

RULE = "os_compute_api:os-server-external-events:create"


def _events(server_id, name, tag=None):
    event = {"name": name, "server_uuid": server_id}
    if tag is not None:
        event["tag"] = tag
    return {"events": [event]}


def _root_volume(compute, token, server_id):
    status, _, body = compute("GET", f"/servers/{server_id}/os-volume_attachments",
                              token("admin", "admin"))
    assert status == 200, body
    return body["volumeAttachments"][0]["volumeId"]


def test_a_members_external_event_is_403(compute, token, demo_server):
    member = token("demo", "demo")
    root = _root_volume(compute, token, demo_server)
    for body in (_events(demo_server, "volume-extended", root),
                 _events(demo_server, "network-changed")):
        status, _, answer = compute("POST", "/os-server-external-events", member, body)
        assert status == 403, (body, status, answer)
        assert RULE in answer["forbidden"]["message"]
    # The owner of the server is no better placed than anyone else: the
    # server is untouched and still ACTIVE.
    status, _, answer = compute("GET", f"/servers/{demo_server}", member)
    assert status == 200 and answer["server"]["status"] == "ACTIVE", answer


def test_the_cinder_service_users_external_event_is_200(compute, token, demo_server):
    cinder = token("cinder", "service")
    status, _, answer = compute("POST", "/os-server-external-events", cinder,
                                _events(demo_server, "network-changed"))
    assert status == 200, answer
    [event] = answer["events"]
    assert (event["server_uuid"], event["status"], event["code"]) == \
        (demo_server, "completed", 200), event
    # The service user sees across projects (the events name other projects'
    # servers); an unknown server is that event's own 404 in a 207, not a 403.
    missing = "00000000-0000-4000-8000-000000000000"
    status, _, answer = compute("POST", "/os-server-external-events", cinder,
                                _events(missing, "network-changed"))
    assert status == 207, answer
    assert answer["events"][0]["code"] == 404
