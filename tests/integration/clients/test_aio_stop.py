"""volumesvc-aio "stops everything it started on Ctrl-C or SIGTERM" (README), guests included."""

from tests.integration.clients.helpers import nova_client, running_aio, unique, wait_server


def test_sigterm_with_a_running_server_leaves_no_qemu_behind():
    """Regression: the QEMU of running servers outlived the all-in-one."""
    with running_aio("vs-clients-stop-") as aio:
        nova = nova_client(aio)
        bdm = [{"source_type": "blank", "destination_type": "volume", "volume_size": 1,
                "boot_index": 0, "delete_on_termination": True}]
        server = nova.servers.create(unique("left-running"), image=None, flavor="42",
                                     block_device_mapping_v2=bdm, nics="none")
        wait_server(nova, server.id, aio=aio)
        assert len(aio.qemu_pids()) == 1
    assert aio.returncode == 0
    assert aio.leftover_qemu == [], f"QEMU left running: {aio.leftover_qemu}"
