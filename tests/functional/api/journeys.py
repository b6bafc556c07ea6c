"""Request bodies and checks shared by the HTTP API test modules.

Kept out of the test modules so that no test module imports another.
"""

import re

_UNSET = object()
FAULTS = {400: "badRequest", 403: "forbidden", 404: "itemNotFound", 409: "conflictingRequest"}
ALICE_TOKEN = "alice:7e57000000000000000000000000a11c"
ADMIN_TOKEN = "admin:admin-project"
UNKNOWN_SERVER = "a77a0000-0000-4000-8000-0000000000ff"


def attachments_url(server, volume=None, query=""):
    """``/v2.1/servers/<server>/os-volume_attachments[/<volume>][<query>]``."""
    url = f"/v2.1/servers/{server}/os-volume_attachments"
    if volume is not None:
        url += f"/{volume}"
    return url + query


def as_admin(headers):
    return {**headers, "x-auth-token": ADMIN_TOKEN}


def at_version(headers, version):
    """``headers`` with ``openstack-api-version`` set to ``compute <version>``."""
    return {**headers, "openstack-api-version": f"compute {version}"}


def server_body(flavor="101", networks=_UNSET, name="s", **fields):
    """A POST /servers body (``networks`` left out when not given)."""
    server = {"name": name, "flavorRef": flavor}
    if networks is not _UNSET:
        server["networks"] = networks
    server.update(fields)
    return {"server": server}


def mapping(source, uuid=None, dest="volume", **fields):
    """One block_device_mapping_v2 entry (``uuid`` left out when None)."""
    entry = {"source_type": source}
    if uuid is not None:
        entry["uuid"] = uuid
    entry["destination_type"] = dest
    entry.update(fields)
    return entry


def assert_fault(resp, status, message=None, fault=None, step=""):
    """``resp`` has ``status``; its ``fault`` message equals ``message``, or matches
    it when ``message`` is a compiled pattern (not checked when None). ``step``
    names the request in a failure.

    ``fault`` is the body's fault key; by default the one Nova gives ``status``.
    """
    assert resp.status_code == status, (step, resp.text)
    if message is None:
        return
    got = resp.json[fault or FAULTS[status]]["message"]
    if isinstance(message, re.Pattern):
        assert message.search(str(got)), (step, got)
    else:
        assert got == message, step


def json_headers(version, token=ALICE_TOKEN, content_type=True, legacy=False):
    """The request headers of a JSON client at ``compute <version>`` (in the
    ``x-openstack-nova-api-version`` header when ``legacy``).
    """
    headers = {"accept": "application/json"}
    if content_type:
        headers["content-type"] = "application/json"
    headers["x-auth-token"] = token
    if legacy:
        headers["x-openstack-nova-api-version"] = version
    else:
        headers["openstack-api-version"] = f"compute {version}"
    return headers


def attach(client, server, headers, **fields):
    """POST os-volume_attachments of ``server`` (id) with ``fields`` as volumeAttachment."""
    return client.post(attachments_url(server), json={"volumeAttachment": fields},
                       headers=headers)


def action_url(uuid):
    return f"/v2.1/servers/{uuid}/action"


def cannot(action, uuid, state):
    """Nova's conflict message for ``action`` on instance ``uuid`` in ``state``."""
    return f"Cannot '{action}' instance {uuid} while it is in {state}"


def instance_actions_url(uuid, request_id=None, query=""):
    """``/v2.1/servers/<uuid>/os-instance-actions[/<request_id>][<query>]``."""
    url = f"/v2.1/servers/{uuid}/os-instance-actions"
    if request_id is not None:
        url += f"/{request_id}"
    return url + query


def assert_advertised(client, headers, version, newest, min_version=None):
    """GET /v2.1/ at ``version`` echoes it in both version headers, and the newest
    version served matches the pattern ``newest`` (the minimum is ``min_version``
    when given).
    """
    resp = client.get("/v2.1/", headers=headers)
    assert resp.status_code == 200, resp.text
    assert resp.headers["openstack-api-version"] == f"compute {version}"
    assert resp.headers["x-openstack-nova-api-version"] == version
    if min_version is not None:
        assert resp.json["version"]["min_version"] == min_version
    assert re.search(newest, str(resp.json["version"]["version"]))


def get_list(client, url, headers, key, count):
    """GET ``url``: a 200 whose ``key`` list has ``count`` items; the response."""
    resp = client.get(url, headers=headers)
    assert resp.status_code == 200, resp.text
    assert len(resp.json[key]) == count
    return resp
