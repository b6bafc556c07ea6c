"""/servers/{id}/ips (no networking: no addresses, every label 404), and what
tempest's server create sends: OS-DCF:diskConfig (accepted, shown as
MANUAL) and a long-form accessIPv6 (stored and shown compressed, as Nova).
"""

import re

from tests.functional.api import fixtures
from tests.functional.api.journeys import at_version, json_headers, mapping, server_body

world = fixtures.ServersWorld  # the world of the client fixture (conftest.py)

HEADERS = json_headers("2.1")


def blank_boot(name, disk_config, **fields):
    """A boot body on a blank 1 GiB root volume asking for ``disk_config``."""
    return server_body(name=name, **{"OS-DCF:diskConfig": disk_config}, **fields,
                       block_device_mapping_v2=[mapping("blank", boot_index=0, volume_size=1)])


def test_boot_from_a_blank_volume_asking_for_auto_disk_config_onwards(client):
    """The journey from here on, in order: each step sees what the earlier ones did."""
    # boot from a blank volume asking for AUTO disk config
    resp = client.post("/v2.1/servers", json=blank_boot(
        "auto-disk", "AUTO", accessIPv6="0000:0000:0000:0000:0000:babe:220.12.22.2"),
        headers=HEADERS)
    assert resp.status_code == 202, resp.text
    assert resp.json["server"]["OS-DCF:diskConfig"] == "MANUAL"
    booted = resp

    # the access address is shown in its compressed form
    prev = resp
    resp = client.get(prev.headers["Location"], headers=HEADERS)
    assert resp.status_code == 200, resp.text
    assert resp.json["server"]["accessIPv6"] == "::babe:dc0c:1602"
    assert resp.json["server"]["OS-DCF:diskConfig"] == "MANUAL"

    # the server is on no network
    resp = client.get(f"{booted.headers['Location']}/ips", headers=HEADERS)
    assert resp.status_code == 200, resp.text
    assert resp.json["addresses"] == {}

    # so any network label is not found
    resp = client.get(f"{booted.headers['Location']}/ips/private", headers=HEADERS)
    assert resp.status_code == 404, resp.text
    assert resp.json["itemNotFound"]["message"] == "Instance is not a member of specified network"

    # another project sees no such server
    resp = client.get(
        f"{booted.headers['Location']}/ips",
        headers={**HEADERS, "x-auth-token": "bob:b0b0000000000000000000000000b0b0"})
    assert resp.status_code == 404, resp.text
    assert resp.json["itemNotFound"]["code"] == 404

    # unknown query keys are ignored before 2.102
    resp = client.get(f"{booted.headers['Location']}/ips?foo=1", headers=HEADERS)
    assert resp.status_code == 200, resp.text

    # and refused from 2.102
    resp = client.get(
        f"{booted.headers['Location']}/ips?foo=1",
        headers=at_version(HEADERS, "2.102"))
    assert resp.status_code == 400, resp.text

    # an unknown server has no addresses to list
    resp = client.get("/v2.1/servers/0bad0000-0000-4000-8000-000000000000/ips", headers=HEADERS)
    assert resp.status_code == 404, resp.text

    # a disk config outside AUTO and MANUAL is refused
    resp = client.post("/v2.1/servers", json=blank_boot("bad-disk", "SOMETIMES"), headers=HEADERS)
    assert resp.status_code == 400, resp.text
    assert re.search("OS-DCF:diskConfig", str(resp.json["badRequest"]["message"]))

