"""read_only on attach (2.108): what is cast, and the refusals the seeded world cannot show.

The HTTP journey is test_volume_attachments_read_only_2_108.py; these
tests change the world underneath (Cinder's version, the compute's service
version, the conductor's RPC cap) and look at the conductor's arguments and
at what Cinder was asked.
"""

import pytest

from tests.functional.api import fixtures
from tests.functional.api.fixtures import VolumeAttachmentsProgressWorld as world

ALICE = {"X-Auth-Token": f"alice:{world.PROJECT}"}
ACTIVE = world.SERVER["ACTIVE"]
FREE = world.VOLUME["FREE"]
PATH = f"/v2.1/servers/{ACTIVE}/os-volume_attachments"


def _attach(client, body, version="2.108"):
    return client.post(PATH, json={"volumeAttachment": body},
                       headers={**ALICE, "OpenStack-API-Version": f"compute {version}"})


def _nothing_reserved(deps):
    assert deps.conductor.calls == []
    assert deps.cinder.get(None, FREE)["status"] == "available"


@pytest.mark.parametrize(("body", "cast"), [
    ({"read_only": True}, True),
    ({"read_only": False}, False),
    ({}, False),
])
def test_the_cast_carries_read_only_only_when_asked(body, cast):
    with fixtures.open_world(world) as (app, deps):
        resp = _attach(app.test_client(), {"volumeId": FREE, **body})
        assert resp.status_code == 202, resp.json
        ((method, kwargs),) = deps.conductor.calls
        assert (method, kwargs["read_only"], kwargs["wait"]) == ("attach_volume", cast, False)
        # Cinder's version is asked only for a read-only attach.
        asked = [name for name, _args in deps.cinder.calls if name == "max_microversion"]
        assert asked == (["max_microversion"] if cast else [])


@pytest.mark.parametrize("cinder_max", ["3.53", "3.44"])
def test_a_cinder_without_attachment_mode_is_a_409(cinder_max):
    with fixtures.open_world(world) as (app, deps):
        deps.cinder.max_version = cinder_max
        resp = _attach(app.test_client(), {"volumeId": FREE, "read_only": True})
        assert resp.status_code == 409, resp.json
        assert resp.json["conflictingRequest"]["message"] == (
            f"Cinder cannot make read-only attachments: its volume API goes up to "
            f"{cinder_max} and an attachment's mode needs 3.54.")
        _nothing_reserved(deps)
        # A read-write attach does not need 3.54.
        assert _attach(app.test_client(), {"volumeId": FREE}).status_code == 202



