"""The deployment the fuzz tier attacks: the functional stack with a few owners' things.

Two projects each own a server (Alice's with a volume attached and an
instance action; Bob's named :data:`BACKTRACKING_NAME`); Alice also owns a
free volume and a snapshot, and there is a private flavor with extra specs.
Generated requests use these ids (as well as made-up ones) so that they
reach the code behind the 404s, and so that requests by Bob carrying
Alice's ids can be checked to never succeed.
"""

import dataclasses
import uuid

from tests.functional.stack import BLANK_ROOT, Stack

# noauth2 tokens are "user:project"; project ids are hex so that the
# /v2.1/{project_id}/... form of every route can be used with them.
ALICE_PROJECT = "a11ce000000000000000000000000001"
BOB_PROJECT = "b0b00000000000000000000000000002"
ADMIN = "admin:admin"
ALICE = f"alice:{ALICE_PROJECT}"
BOB = f"bob:{BOB_PROJECT}"
# Against ``^(a+)+$`` a backtracking engine needs about 2**60 steps for this
# name (the 28-character one that was found took 8 s): a list filtered by
# such a pattern answers only if nothing backtracks.
BACKTRACKING_NAME = "a" * 60 + "!"


@dataclasses.dataclass
class World:
    stack: Stack
    alice_server: str
    bob_server: str
    alice_attached_volume: str
    alice_free_volume: str
    alice_snapshot: str
    alice_request_id: str
    private_flavor: str
    service_id: str
    service_uuid: str

    def alice_ids(self) -> set[str]:
        """Ids only Alice (and admins) may act on."""
        return {self.alice_server, self.alice_attached_volume, self.alice_free_volume,
                self.alice_snapshot}

    def ids(self) -> dict[str, list[str]]:
        """Known ids per URL placeholder name."""
        servers = [self.alice_server, self.bob_server]
        volumes = [self.alice_attached_volume, self.alice_free_volume]
        return {
            "server_id": servers,
            "volume_id": volumes,
            "request_id": [self.alice_request_id],
            "flavor_id": ["42", "1", self.private_flavor],
            "key": ["hw:cpu_policy"],
            "service_id": [self.service_id, self.service_uuid, "disable-log-reason",
                           "enable", "disable", "force-down"],
            "project_id": [ALICE_PROJECT, BOB_PROJECT],
            "tenant_id": [ALICE_PROJECT, BOB_PROJECT],
            # Body values that name a volume, snapshot, image or flavor.
            "volume": volumes + [self.alice_snapshot],
            "flavor": ["42", "1", self.private_flavor],
        }


def _boot(stack, token, name="fuzz-owner"):
    status, body, headers = stack.api("POST", "/servers", {"server": {
        "name": name, "flavorRef": "42", "block_device_mapping_v2": BLANK_ROOT}},
        token=token)
    assert status == 202, body
    server_id = body["server"]["id"]
    stack.wait_for_server_status(server_id, "ACTIVE")
    return server_id, headers["x-openstack-request-id"]


def build(tmp_path) -> World:
    stack = Stack(tmp_path)
    alice_server, alice_request_id = _boot(stack, ALICE)
    bob_server, _ = _boot(stack, BOB, BACKTRACKING_NAME)
    alice_ctx = stack.context(project=ALICE_PROJECT)
    attached = stack.cinder.create(alice_ctx, 1, "fuzz-attached", "")["id"]
    stack.api("POST", f"/servers/{alice_server}/os-volume_attachments",
              {"volumeAttachment": {"volumeId": attached}}, token=ALICE, status=200)
    stack.wait(lambda: stack.cinder.get(None, attached)["status"] == "in-use",
               what="fuzz volume attached")
    free = stack.cinder.create(alice_ctx, 1, "fuzz-free", "")["id"]
    snapshot = stack.cinder.create_snapshot_force(alice_ctx, free)["id"]
    flavor = f"fuzz-{uuid.uuid4().hex[:8]}"
    stack.api("POST", "/flavors", {"flavor": {
        "name": flavor, "id": flavor, "ram": 64, "vcpus": 1, "disk": 1,
        "os-flavor-access:is_public": False}}, status=200)
    _, services, _ = stack.api("GET", "/os-services", version="2.53")
    service_uuid = services["services"][0]["id"]
    _, legacy, _ = stack.api("GET", "/os-services")
    return World(stack=stack, alice_server=alice_server, bob_server=bob_server,
                 alice_attached_volume=attached, alice_free_volume=free,
                 alice_snapshot=snapshot, alice_request_id=alice_request_id,
                 private_flavor=flavor, service_id=str(legacy["services"][0]["id"]),
                 service_uuid=service_uuid)
