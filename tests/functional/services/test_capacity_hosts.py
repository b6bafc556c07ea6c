"""Host choice by capacity: each fake compute reports its memory and vCPUs, flavors fill them.

``small`` reports 1 GiB and 2 vCPUs, ``large`` 4 GiB and 8 vCPUs (``[virt]
fake_host_*``); boots go through the real API and conductor.
"""

import pytest

from tests.functional.stack import BLANK_ROOT, Stack
from volumesvc import binaries
from volumesvc.objects import instance as instance_obj
from volumesvc.objects import instance_fault as fault_obj
from volumesvc.objects import service as service_obj

TOKEN = "u1:p1"


def _size(memory_mb, vcpus):
    return {("virt", "fake_host_memory_mb"): memory_mb, ("virt", "fake_host_vcpus"): vcpus}


@pytest.fixture
def stack(tmp_path):
    stack = Stack(tmp_path, hosts=(), conf_overrides={
        (None, "cpu_allocation_ratio"): 1.0, (None, "ram_allocation_ratio"): 1.0})
    stack.add_compute("small", _size(1024, 2))
    stack.add_compute("large", _size(4096, 8))
    stack.api("POST", "/flavors", {"flavor": {"name": "big", "id": "big", "ram": 2048,
                                              "vcpus": 2, "disk": 1}}, status=200)
    yield stack
    stack.stop()


def _boot(stack, flavor):
    _, body, _ = stack.api("POST", "/servers", {"server": {
        "name": "s", "flavorRef": flavor, "block_device_mapping_v2": BLANK_ROOT}},
        token=TOKEN, status=202)
    return body["server"]["id"]


def test_each_compute_reports_its_size(stack):
    def sizes():
        found = {s.host: (s.capabilities.get("memory_mb"), s.capabilities.get("vcpus"))
                 for s in service_obj.list_services(stack.db, stack.admin_context(),
                                                    binary=binaries.COMPUTE)}
        return found if found == {"small": (1024, 2), "large": (4096, 8)} else None
    stack.wait(sizes, what="both computes' sizes in their service records")


def test_a_flavor_goes_to_the_host_with_room_until_none_has(stack):
    first = _boot(stack, "big")
    stack.wait_for_server_status(first, "ACTIVE")
    assert instance_obj.get_by_uuid(stack.db, stack.admin_context(), first).host == "large"
    second = _boot(stack, "big")
    stack.wait_for_server_status(second, "ACTIVE")
    assert instance_obj.get_by_uuid(stack.db, stack.admin_context(), second).host == "large"
    third = _boot(stack, "big")
    stack.wait_for_server_status(third, "ERROR")
    fault = fault_obj.latest(stack.db, stack.admin_context(), third).message
    assert "No valid host" in fault
    assert "small: not enough RAM (1024 MiB free, 2048 MiB needed)" in fault
    assert "large: not enough RAM (0 MiB free, 2048 MiB needed)" in fault


def test_the_cpu_ratio_bounds_the_vcpus_a_host_holds(stack):
    stack.conf.set_override("cpu_allocation_ratio", 0.5)
    stack.conf.set_override("ram_allocation_ratio", 100.0)
    for _ in range(2):
        server = _boot(stack, "big")
        stack.wait_for_server_status(server, "ACTIVE")
        assert instance_obj.get_by_uuid(stack.db, stack.admin_context(),
                                        server).host == "large"
    refused = _boot(stack, "big")
    stack.wait_for_server_status(refused, "ERROR")
    fault = fault_obj.latest(stack.db, stack.admin_context(), refused).message
    assert "small: not enough vCPUs (1 free, 2 needed)" in fault
    assert "large: not enough vCPUs (0 free, 2 needed)" in fault


def test_a_storm_of_concurrent_boots_never_overfills_a_host(stack):
    """Eight boots of 1 GiB at once (under the default quota of 10): four fit ``large``, one
    ``small``; the other three fail with No valid host, whatever order the claims come in."""
    import concurrent.futures

    stack.api("POST", "/flavors", {"flavor": {"name": "gig", "id": "gig", "ram": 1024,
                                              "vcpus": 1, "disk": 1}}, status=200)
    with concurrent.futures.ThreadPoolExecutor(max_workers=8) as pool:
        servers = list(pool.map(lambda _: _boot(stack, "gig"), range(8)))

    def settled():
        found = [stack.server(s)["status"] for s in servers]
        return found if set(found) <= {"ACTIVE", "ERROR"} else None
    statuses = stack.wait(settled, timeout=60, what="every boot of the storm settled")
    assert statuses.count("ACTIVE") == 5 and statuses.count("ERROR") == 3
    hosts = instance_obj.flavor_totals_by_host(stack.db, stack.admin_context(),
                                               ["small", "large"])
    assert hosts == {"small": {"vcpus": 1, "memory_mb": 1024},
                     "large": {"vcpus": 4, "memory_mb": 4096}}
