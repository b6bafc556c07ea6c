"""Issue 11 against the real all-in-one: refusals that must leave Cinder untouched.

* createImage whose metadata names a Glance image attribute is a 400 and has
  made no Cinder snapshot, so the server's delete-on-termination volume is
  still deleted with it.
* Project B cannot attach project A's volume, even though the all-in-one's
  noauth Cinder answers every caller as an admin: 404, and the volume stays
  available.
"""

import uuid

import pytest
from novaclient import exceptions as nova_exc

from tests.integration.clients.helpers import (
    attached_volume_ids,
    cinder_client,
    delete_server_quietly,
    delete_volume_quietly,
    nova_client,
    unique,
    wait_server,
    wait_server_gone,
    wait_volume,
    wait_volume_gone,
)

BLANK_ROOT = [{"source_type": "blank", "destination_type": "volume", "volume_size": 1,
               "boot_index": 0, "delete_on_termination": True}]


def _token(user):
    return f"{user}:{uuid.uuid4().hex}"


def _boot(aio, nova, name):
    server = nova.servers.create(unique(name), image=None, flavor="42",
                                 block_device_mapping_v2=BLANK_ROOT, nics="none")
    return wait_server(nova, server.id, aio=aio)


@pytest.mark.parametrize("key", ["visibility", "owner"])
def test_refused_create_image_leaves_no_snapshot(aio, cinder, key):
    nova = nova_client(aio, token=_token("alice"))
    server = _boot(aio, nova, "refused-image")
    volume_ids = attached_volume_ids(server)
    try:
        with pytest.raises(nova_exc.BadRequest):
            nova.servers.create_image(server.id, unique("img"), metadata={key: "public"})
        snapshots = [s for s in cinder.volume_snapshots.list(search_opts={"all_tenants": 1})
                     if s.volume_id in volume_ids]
        assert snapshots == []
        nova.servers.delete(server.id)
        wait_server_gone(nova, server.id, timeout=60)
        for volume_id in volume_ids:
            wait_volume_gone(cinder, volume_id)
    finally:
        delete_server_quietly(nova, server.id)
        for volume_id in volume_ids:
            delete_volume_quietly(cinder, volume_id)


def test_another_projects_volume_cannot_be_attached(aio, cinder):
    alice_cinder = cinder_client(aio, token=_token("alice"))
    bob = nova_client(aio, token=_token("bob"))
    volume = alice_cinder.volumes.create(1, name=unique("alices"))
    server = None
    try:
        wait_volume(cinder, volume.id, "available")
        server = _boot(aio, bob, "bobs")
        with pytest.raises(nova_exc.NotFound):
            bob.volumes.create_server_volume(server.id, volume.id)
        assert wait_volume(cinder, volume.id, "available").attachments == []
    finally:
        if server is not None:
            delete_server_quietly(bob, server.id)
        delete_volume_quietly(cinder, volume.id)
