"""The README's promise: clouds.yaml is all a client needs, no endpoint overrides.

``openstack --os-cloud volumesvc-aio`` boots from a volume with a type,
attaches, lists and detaches; openstacksdk's ``connect(cloud=...)`` lists
servers as the demo member, and the demo reader cannot create one.
"""

from tests.integration.clients.helpers import unique
from tests.integration.keystone.conftest import cinder_for, wait_volume_status


def test_openstack_cli_boots_from_a_typed_volume_attaches_lists_detaches(kaio, osc, token):
    vtype = unique("gold")
    admin_cinder = cinder_for(kaio, token("admin", "admin"))
    admin_cinder.volume_types.create(vtype)
    name = unique("osc")
    server = osc("volumesvc-aio", "server", "create", "--flavor", "42", "--nic", "none",
                 "--wait", "--block-device",
                 "source_type=blank,destination_type=volume,volume_size=1,"
                 f"volume_type={vtype},boot_index=0,delete_on_termination=true", name)
    assert server["status"] == "ACTIVE"
    root = admin_cinder.volumes.get(server["volumes_attached"][0]["id"])
    assert root.volume_type == vtype

    volume = osc("volumesvc-aio", "volume", "create", "--size", "1", unique("data"))
    wait_volume_status(admin_cinder, volume["id"], "available")
    osc("volumesvc-aio", "server", "add", "volume", server["id"], volume["id"])
    listed = osc("volumesvc-aio", "server", "volume", "list", server["id"])
    assert volume["id"] in [row["Volume ID"] for row in listed]
    wait_volume_status(admin_cinder, volume["id"], "in-use")
    osc("volumesvc-aio", "server", "remove", "volume", server["id"], volume["id"],
        json_out=False)
    wait_volume_status(admin_cinder, volume["id"], "available")

    osc("volumesvc-aio", "server", "delete", "--wait", server["id"], json_out=False)
    osc("volumesvc-aio", "volume", "delete", volume["id"], json_out=False)
    listed = osc("volumesvc-aio", "server", "list")
    assert server["id"] not in [row["ID"] for row in listed]


def test_sdk_connect_by_cloud_name_and_the_readers_403(kaio, osc, monkeypatch, demo_server):
    import openstack

    monkeypatch.setenv("OS_CLIENT_CONFIG_FILE", kaio.clouds_yaml)
    conn = openstack.connect(cloud="volumesvc-aio-demo")
    assert demo_server in [s.id for s in conn.compute.servers()]
    reader = openstack.connect(cloud="volumesvc-aio-reader")
    assert demo_server in [s.id for s in reader.compute.servers()]
    refused = osc("volumesvc-aio-reader", "server", "create", "--flavor", "42", "--nic", "none",
                  "--image", kaio.image_id, unique("reader"), check=False, json_out=False)
    assert refused.returncode != 0
    assert "403" in refused.stderr and "os_compute_api:servers:create" in refused.stderr, \
        refused.stderr
