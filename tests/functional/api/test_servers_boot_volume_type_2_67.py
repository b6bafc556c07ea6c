"""Boot from volume with BDM volume_type (2.67): by id stored as name, every refusal of
doc/source/contributor/contract.rst §4.2.
"""

import re

from tests.functional.api.fixtures import ServersWorld as world
from tests.functional.api.journeys import (
    assert_fault,
    at_version,
    json_headers,
    mapping,
    server_body,
)

HEADERS = json_headers("2.67")


def boot(name, *entries, networks="none", **fields):
    return server_body(name=name, networks=networks, block_device_mapping_v2=list(entries),
                       **fields)


def blank_root(volume_type):
    return mapping("blank", boot_index=0, volume_size=1, volume_type=volume_type)


# (step, body, version, status, message: text, pattern or None), in journey order.
STEPS = [
    ("a type by name is fine too",
     boot("typed-by-name", blank_root("fast"), networks="auto"), "2.67", 202, None),
    ("empty volume_type is ignored", boot("untyped", blank_root("")), "2.67", 202, None),
    ("unknown volume type", boot("bad-type", blank_root("gold")), "2.67", 400,
     "Volume type gold could not be found."),
    ("volume type with a local destination",
     boot("local-type",
          mapping("blank", dest="local", boot_index=-1, volume_size=1, volume_type="fast"),
          flavor="102", imageRef=world.IMAGE), "2.67", 400,
     "Block Device Mapping is Invalid: Specifying a volume_type with destination_type=local "
     "is not supported."),
    ("volume type with an existing volume",
     boot("existing-type", mapping("volume", world.VOL_BOOT, boot_index=0, volume_type="fast")),
     "2.67", 400,
     "Block Device Mapping is Invalid: Specifying volume type to existing volume is not "
     "supported."),
    ("volume_type is unknown before 2.67", boot("too-early", blank_root("fast")), "2.66", 400,
     re.compile(r"Additional properties are not allowed \('volume_type' was unexpected\)")),
]


def test_blank_volume_with_a_type_given_by_id_onwards(client):
    """The journey from here on, in order: each step sees what the earlier ones did."""
    # blank volume with a type given by id
    root = mapping("image", world.IMAGE, boot_index=0, volume_size=4, volume_type=world.TYPE_FAST)
    resp = client.post("/v2.1/servers", json=boot("typed", root), headers=HEADERS)
    assert resp.status_code == 202, resp.text
    assert re.search("servers/[0-9a-f-]{36}$", resp.headers["location"])
    assert re.search("^[0-9a-f-]{36}$", str(resp.json["server"]["id"]))
    assert resp.json["server"]["OS-DCF:diskConfig"] == "MANUAL"
    assert resp.json["server"]["security_groups"][0]["name"] == "default"
    assert re.search("^.{12}$", str(resp.json["server"]["adminPass"]))
    assert resp.json["server"]["links"][0]["rel"] == "self"

    # the typed server is building with no image
    prev = resp
    resp = client.get(prev.headers["Location"], headers=HEADERS)
    assert resp.status_code == 200, resp.text
    assert resp.json["server"]["status"] == "BUILD"
    assert resp.json["server"]["image"] == ""
    assert resp.json["server"]["OS-EXT-STS:task_state"] == "scheduling"
    assert resp.json["server"]["OS-EXT-STS:vm_state"] == "building"
    assert resp.json["server"]["OS-EXT-STS:power_state"] == 0
    assert resp.json["server"]["flavor"]["original_name"] == "test.small"
    assert resp.json["server"]["name"] == "typed"
    assert resp.json["server"]["hostId"] == ""

    for step, body, version, status, message in STEPS:
        resp = client.post("/v2.1/servers", json=body, headers=at_version(HEADERS, version))
        assert_fault(resp, status, message, step=step)

    # boot from a volume-backed snapshot image uses its mappings
    body = server_body(name="from-snapshot-image", imageRef=world.IMAGE_BFV_SNAPSHOT,
                       networks="none")
    resp = client.post("/v2.1/servers", json=body, headers=HEADERS)
    assert resp.status_code == 202, resp.text

    # the snapshot-image server shows its image
    prev = resp
    resp = client.get(prev.headers["Location"], headers=HEADERS)
    assert resp.status_code == 200, resp.text
    assert resp.json["server"]["image"]["id"] == world.IMAGE_BFV_SNAPSHOT
    assert resp.json["server"]["status"] == "BUILD"
