"""user_data and the key pair's public key as a boot and a 2.57 rebuild keep them.

Through the real API, conductor and compute: what a boot stores, what
``OS-EXT-SRV-ATTR:user_data`` shows to whom at which microversion, and the
400s of a body that is not base64 or is too long (Nova's schema answers).
"""

import base64

import pytest

from tests.functional.stack import BLANK_ROOT
from volumesvc.objects import instance as instance_obj

TOKEN = "u1:p1"
ADMIN = "admin:admin"
SCRIPT = base64.b64encode(b"#!/bin/sh\necho hello from user_data\n").decode()


def _boot(stack, version="2.67", status=202, **fields):
    return stack.api("POST", "/servers", {"server": {
        "name": "ud", "flavorRef": "42", "networks": "none",
        "block_device_mapping_v2": BLANK_ROOT, **fields}},
        version=version, token=TOKEN, status=status)[1]


def _row(stack, uuid):
    return instance_obj.get_by_uuid(stack.db, stack.admin_context(), uuid)


def _message(body):
    return body["badRequest"]["message"]


def test_user_data_is_kept_and_shown_to_admins_from_2_3(stack):
    uuid = _boot(stack, user_data=SCRIPT)["server"]["id"]
    stack.wait_for_server_status(uuid, "ACTIVE")
    assert _row(stack, uuid).user_data == SCRIPT
    for version, token, shown in (("2.3", ADMIN, True), ("2.96", ADMIN, True),
                                  ("2.1", ADMIN, False), ("2.3", TOKEN, False),
                                  ("2.96", TOKEN, False)):
        server = stack.api("GET", f"/servers/{uuid}", version=version, token=token,
                           status=200)[1]["server"]
        assert ("OS-EXT-SRV-ATTR:user_data" in server) is shown, (version, token)
        if shown:
            assert server["OS-EXT-SRV-ATTR:user_data"] == SCRIPT
    listed = stack.api("GET", "/servers/detail?all_tenants=1", version="2.3", token=ADMIN,
                       status=200)[1]["servers"]
    assert [s["OS-EXT-SRV-ATTR:user_data"] for s in listed if s["id"] == uuid] == [SCRIPT]


def test_a_server_without_user_data_shows_null(stack):
    uuid = _boot(stack)["server"]["id"]
    server = stack.api("GET", f"/servers/{uuid}", version="2.3", token=ADMIN,
                       status=200)[1]["server"]
    assert server["OS-EXT-SRV-ATTR:user_data"] is None


@pytest.mark.parametrize("value", ["not base64!", "aGk", "ab=c", "é==="])
def test_user_data_that_is_not_base64_is_a_400(stack, value):
    body = _boot(stack, status=400, user_data=value)
    assert _message(body).startswith("Invalid input for field/attribute server/user_data.")
    assert "is not a 'base64'" in _message(body)
    assert stack.api("GET", "/servers", token=TOKEN, status=200)[1]["servers"] == []


def test_user_data_longer_than_65535_characters_is_a_400(stack):
    body = _boot(stack, status=400, user_data="QUFB" * 16384)
    assert "is too long" in _message(body)
    # The longest accepted: 65535 characters of base64 (Nova's maxLength).
    longest = base64.b64encode(b"x" * 49149).decode() + "=" * 3
    assert len(longest) == 65535
    uuid = _boot(stack, user_data=longest)["server"]["id"]
    assert _row(stack, uuid).user_data == longest


def test_user_data_of_another_type_is_a_400(stack):
    assert "is not of type 'string'" in _message(_boot(stack, status=400, user_data=12))


def test_user_data_is_decoded_as_leniently_as_nova_does(stack):
    """Characters outside the alphabet are skipped, as Python's decoder (and Nova) do."""
    uuid = _boot(stack, user_data="aGk=\n")["server"]["id"]
    assert _row(stack, uuid).user_data == "aGk=\n"


def test_the_key_pairs_public_key_is_kept_with_the_server(stack):
    key = stack.api("POST", "/os-keypairs", {"keypair": {"name": "k1"}}, version="2.10",
                    token=TOKEN, status=201)[1]["keypair"]
    uuid = _boot(stack, key_name="k1")["server"]["id"]
    row = _row(stack, uuid)
    assert (row.key_name, row.key_data) == ("k1", key["public_key"])
    # Deleting the key pair later leaves the server with the key it was given.
    stack.api("DELETE", "/os-keypairs/k1", version="2.10", token=TOKEN, status=204)
    assert _row(stack, uuid).key_data == key["public_key"]


def test_rebuild_at_2_57_replaces_or_clears_user_data_and_checks_it(stack):
    image = stack.glance.create(stack.context(), name="img", owner="p1", data=b"x")["id"]
    volume = stack.cinder.create(stack.context(), 1, "root", "", image_id=image)["id"]
    uuid = _boot(stack, user_data=SCRIPT, block_device_mapping_v2=[{
        "source_type": "volume", "destination_type": "volume", "uuid": volume,
        "boot_index": 0}])["server"]["id"]
    stack.wait_for_server_status(uuid, "ACTIVE")
    path = f"/servers/{uuid}/action"

    def rebuild(version="2.57", status=202, **fields):
        return stack.api("POST", path, {"rebuild": {"imageRef": image, **fields}},
                         version=version, token=TOKEN, status=status)[1]

    body = rebuild(version="2.56", status=400, user_data="aGk=")
    assert "user_data" in _message(body)
    assert "is not a 'base64'" in _message(rebuild(status=400, user_data="aGk"))
    assert "is too long" in _message(rebuild(status=400, user_data="QUFB" * 16384))
    assert _row(stack, uuid).user_data == SCRIPT

    new = base64.b64encode(b"#!/bin/sh\necho rebuilt\n").decode()
    assert rebuild(user_data=new)["server"]["user_data"] == new
    stack.wait_for_server_status(uuid, "ACTIVE")
    assert _row(stack, uuid).user_data == new
    # Not named: kept.
    assert rebuild()["server"]["user_data"] == new
    stack.wait_for_server_status(uuid, "ACTIVE")
    assert rebuild(user_data=None)["server"]["user_data"] is None
    stack.wait_for_server_status(uuid, "ACTIVE")
    assert _row(stack, uuid).user_data is None


def test_rebuild_at_2_54_keeps_the_new_key_pairs_public_key(stack):
    image = stack.glance.create(stack.context(), name="img", owner="p1", data=b"x")["id"]
    volume = stack.cinder.create(stack.context(), 1, "root", "", image_id=image)["id"]
    uuid = _boot(stack, block_device_mapping_v2=[{
        "source_type": "volume", "destination_type": "volume", "uuid": volume,
        "boot_index": 0}])["server"]["id"]
    stack.wait_for_server_status(uuid, "ACTIVE")
    key = stack.api("POST", "/os-keypairs", {"keypair": {"name": "k2"}}, version="2.10",
                    token=TOKEN, status=201)[1]["keypair"]
    stack.api("POST", f"/servers/{uuid}/action",
              {"rebuild": {"imageRef": image, "key_name": "k2"}}, version="2.54",
              token=TOKEN, status=202)
    assert (_row(stack, uuid).key_name, _row(stack, uuid).key_data) == ("k2", key["public_key"])
    stack.wait_for_server_status(uuid, "ACTIVE")
    stack.api("POST", f"/servers/{uuid}/action",
              {"rebuild": {"imageRef": image, "key_name": None}}, version="2.54",
              token=TOKEN, status=202)
    assert (_row(stack, uuid).key_name, _row(stack, uuid).key_data) == (None, None)
