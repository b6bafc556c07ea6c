"""Key pairs, zones, limits and quotas through the unmodified openstack CLI, and a boot storm.

Against the Keystone all-in-one, so OSC finds projects by name as it does in
any cloud. The storm: 40 image-backed boots at once by one member against an
instances quota of 30 must leave exactly 30 servers (the others 403).
"""

import concurrent.futures

from tests import polling
from tests.integration.clients.helpers import unique

STORM, LIMIT = 40, 30
# ``osc(cloud, *args)`` (conftest.py): the openstack CLI with the all-in-one's clouds.yaml.


def test_keypair_create_list_delete(osc):
    name = unique("kp")
    # Without --public-key OSC prints the generated private key itself.
    private_key = osc("volumesvc-aio-demo", "keypair", "create", name, json_out=False)
    assert "PRIVATE KEY-----" in private_key
    listed = osc("volumesvc-aio-demo", "keypair", "list")
    assert name in [row["Name"] for row in listed]
    osc("volumesvc-aio-demo", "keypair", "delete", name, json_out=False)
    assert name not in [row["Name"] for row in osc("volumesvc-aio-demo", "keypair", "list")]


def test_availability_zone_list(osc):
    zones = osc("volumesvc-aio-demo", "availability", "zone", "list", "--compute")
    assert {"Zone Name": "nova", "Zone Status": "available"} in [
        {k: row[k] for k in ("Zone Name", "Zone Status")} for row in zones]


# OSC prints the SDK's attribute names (recent releases) or Nova's (older ones).
_SDK_NAMES = {"instances": "maxTotalInstances", "instances_used": "totalInstancesUsed",
              "total_cores": "maxTotalCores", "total_cores_used": "totalCoresUsed"}


def _absolute(osc, cloud="volumesvc-aio-demo"):
    rows = {row["Name"]: row["Value"] for row in osc(cloud, "limits", "show", "--absolute")}
    return {_SDK_NAMES.get(name, name): value for name, value in rows.items()}


def test_limits_show_absolute(osc):
    rows = _absolute(osc)
    # The all-in-one gives its demo project no instance or core limit.
    assert rows["maxTotalInstances"] == -1 and rows["maxTotalCores"] == -1, rows
    assert isinstance(rows["totalInstancesUsed"], int) and rows["totalInstancesUsed"] >= 0


def test_quota_set_show_and_a_storm_of_boots_against_it(kaio, osc, token, compute,
                                                        other_project):
    user, project = other_project
    osc("volumesvc-aio", "quota", "set", "--instances", str(LIMIT), "--cores", "-1",
        "--ram", "-1", project, json_out=False)
    shown = osc("volumesvc-aio", "quota", "show", "--compute", project)
    values = {row["Resource"]: row["Limit"] for row in shown} if isinstance(shown, list) \
        else shown
    assert values["instances"] == LIMIT

    image_id = osc("volumesvc-aio", "image", "show", "volumesvc-tiny-raw")["id"]
    member = token(user, project)

    def boot(index):
        status, _, body = compute("POST", "/servers", member, {"server": {
            "name": f"storm-{index}", "flavorRef": "42", "imageRef": image_id,
            "networks": "none"}})
        return status, body

    with concurrent.futures.ThreadPoolExecutor(max_workers=STORM) as pool:
        results = list(pool.map(boot, range(STORM)))
    statuses = sorted(status for status, _ in results)
    assert statuses == [202] * LIMIT + [403] * (STORM - LIMIT), results
    assert {body["forbidden"]["message"] for status, body in results if status == 403} == {
        f"Quota exceeded for instances: Requested 1, but already used {LIMIT} of {LIMIT} "
        "instances"}
    _, _, listed = compute("GET", "/servers", member)
    assert len(listed["servers"]) == LIMIT
    status, _, body = compute("POST", "/servers", member, {"server": {
        "name": unique("over"), "flavorRef": "42", "imageRef": image_id,
        "networks": "none"}})
    assert status == 403 and "Quota exceeded for instances" in body["forbidden"]["message"]
    for server in listed["servers"]:
        compute("DELETE", f"/servers/{server['id']}", member)
    # Thirty guests booting (then torn down) on two cores slow every later
    # test of the session: the storm ends when they are gone.
    assert polling.eventually(lambda: not compute("GET", "/servers", member)[2]["servers"],
                              timeout=300, interval=2), \
        f"storm servers not gone after 300 s\n{kaio.logs(20)}"


def test_osc_boot_past_the_instances_quota_is_a_403(osc):
    """The demo project at its limit: ``openstack server create`` fails with Nova's 403."""
    used = _absolute(osc)["totalInstancesUsed"]
    osc("volumesvc-aio", "quota", "set", "--instances", str(used), "demo", json_out=False)
    try:
        image_id = osc("volumesvc-aio", "image", "show", "volumesvc-tiny-raw")["id"]
        result = osc("volumesvc-aio-demo", "server", "create", "--flavor", "42", "--image",
                     image_id, "--nic", "none", unique("over"), check=False)
        assert result.returncode != 0
        assert "Quota exceeded for instances" in result.stderr, result.stderr
        assert "403" in result.stderr, result.stderr
    finally:
        # Back to the all-in-one's default (unlimited) for the rest of the session.
        osc("volumesvc-aio", "quota", "set", "--instances", "-1", "demo", json_out=False)
