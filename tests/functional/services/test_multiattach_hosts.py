"""Multiattach across two computes, one of them without the capability (fake://).

``cap-compute`` runs the fake libvirt driver as is; ``plain-compute`` runs
it with ``[virt] disabled_capabilities = supports_multiattach``, like a
hypervisor that cannot share a disk. Boots go through the real API and
conductor, so placement, the up-front 409 and the 2.59/2.60 boot rules are
seen the way a client sees them.
"""

import pytest

from tests.functional.stack import BLANK_ROOT, Stack
from volumesvc.objects import instance as instance_obj
from volumesvc.objects import instance_fault as fault_obj

TOKEN = "u1:p1"
CAPABLE, PLAIN = "cap-compute", "plain-compute"
NO_MULTIATTACH = {("virt", "disabled_capabilities"): ["supports_multiattach"]}


@pytest.fixture
def two_hosts(tmp_path):
    stack = Stack(tmp_path, hosts=(CAPABLE,))
    stack.add_compute(PLAIN, NO_MULTIATTACH)
    stack.cinder.create_volume_type("multi", {"multiattach": "<is> True"})
    yield stack
    stack.stop()


def _multiattach_volume(stack, name="shared", bootable=False):
    volume = stack.cinder.create(stack.context(), 1, name, "", volume_type="multi")
    if bootable:
        stack.cinder.volumes[volume["id"]]["bootable"] = "true"
    return volume["id"]


def _boot(stack, bdms, version="2.60", status=202, name="s"):
    _, body, _ = stack.api("POST", "/servers", {"server": {
        "name": name, "flavorRef": "42", "networks": "none",
        "block_device_mapping_v2": bdms}}, version=version, token=TOKEN, status=status)
    return body


def _root_volume(volume_id):
    return [{"source_type": "volume", "destination_type": "volume", "uuid": volume_id,
             "boot_index": 0}]


def _host(stack, server_id):
    return instance_obj.get_by_uuid(stack.db, stack.admin_context(), server_id).host


def _server_on(stack, host, name):
    """Boot blank-root servers until one lands on ``host`` (placement spreads)."""
    for _ in range(4):
        server_id = _boot(stack, BLANK_ROOT, name=name)["server"]["id"]
        stack.wait_for_server_status(server_id, "ACTIVE")
        if _host(stack, server_id) == host:
            return server_id
    raise AssertionError(f"no server landed on {host}")


def test_boots_spread_across_the_up_computes(two_hosts):
    first = _boot(two_hosts, BLANK_ROOT, name="a")["server"]["id"]
    two_hosts.wait_for_server_status(first, "ACTIVE")
    second = _boot(two_hosts, BLANK_ROOT, name="b")["server"]["id"]
    two_hosts.wait_for_server_status(second, "ACTIVE")
    assert {_host(two_hosts, first), _host(two_hosts, second)} == {CAPABLE, PLAIN}


def test_boot_from_a_multiattach_root_lands_only_on_the_capable_host(two_hosts):
    # Fill the capable host first, so a load-only choice would pick the plain one.
    _server_on(two_hosts, CAPABLE, "filler")
    for n in range(2):
        volume_id = _multiattach_volume(two_hosts, f"root{n}", bootable=True)
        server_id = _boot(two_hosts, _root_volume(volume_id), name=f"m{n}")["server"]["id"]
        two_hosts.wait_for_server_status(server_id, "ACTIVE")
        assert _host(two_hosts, server_id) == CAPABLE
        assert two_hosts.cinder.get(None, volume_id)["status"] == "in-use"
        xml = two_hosts.computes[CAPABLE].manager.driver.get_domain_xml({"uuid": server_id})
        assert "<shareable" in xml and f"<serial>{volume_id}</serial>" in xml


def test_boot_from_a_multiattach_root_below_2_60_is_refused_and_leaves_it_available(
        two_hosts):
    volume_id = _multiattach_volume(two_hosts, bootable=True)
    body = _boot(two_hosts, _root_volume(volume_id), version="2.59", status=400)
    assert body["badRequest"]["message"] == (
        "Multiattach volumes are only supported starting with compute API version 2.60.")
    volume = two_hosts.cinder.get(None, volume_id)
    assert (volume["status"], volume["attachments"]) == ("available", [])
    assert not two_hosts.cinder.attachments


def test_no_valid_host_when_only_the_plain_host_is_up(tmp_path):
    stack = Stack(tmp_path, hosts=())
    try:
        stack.add_compute(PLAIN, NO_MULTIATTACH)
        stack.cinder.create_volume_type("multi", {"multiattach": "<is> True"})
        volume_id = _multiattach_volume(stack, bootable=True)
        server_id = _boot(stack, _root_volume(volume_id))["server"]["id"]
        stack.wait_for_server_status(server_id, "ERROR")
        fault = fault_obj.latest(stack.db, stack.admin_context(), server_id)
        assert "No valid host" in fault.message
        assert f"{PLAIN}: lacks supports_multiattach" in fault.message
        assert _host(stack, server_id) is None
    finally:
        stack.stop()


def test_attach_to_a_server_on_the_plain_host_is_a_409_up_front(two_hosts):
    server_id = _server_on(two_hosts, PLAIN, "plain")
    volume_id = _multiattach_volume(two_hosts)
    for version in ("2.60", "2.100", "2.101"):
        _, body, _ = two_hosts.api(
            "POST", f"/servers/{server_id}/os-volume_attachments",
            {"volumeAttachment": {"volumeId": volume_id}}, version=version, token=TOKEN,
            status=409)
        assert "supports_multiattach is off" in body["conflictingRequest"]["message"]
        volume = two_hosts.cinder.get(None, volume_id)
        assert (volume["status"], volume["attachments"]) == ("available", [])
    assert not [a for a in two_hosts.cinder.attachments.values()
                if a["volume_id"] == volume_id]


def test_pick_host_honours_requested_hosts_and_minimum_service_version(two_hosts):
    """Unshelve's host and version limits go through the same ``pick_host`` as a boot."""
    from volumesvc.conductor import scheduling

    stack, ctx = two_hosts, two_hosts.admin_context()
    pick = scheduling.pick_host
    # Both are empty, so the tie goes to the first name; a requested host wins.
    assert pick(stack.conf, stack.db, ctx, scheduling.Requirements()) == CAPABLE
    assert pick(stack.conf, stack.db, ctx,
                scheduling.Requirements(hosts=(PLAIN,))) == PLAIN
    with pytest.raises(scheduling.NoValidHost) as refused:
        pick(stack.conf, stack.db, ctx, scheduling.Requirements(min_version=10_000))
    assert "service version" in str(refused.value)
    with pytest.raises(scheduling.NoValidHost) as refused:
        pick(stack.conf, stack.db, ctx, scheduling.Requirements(
            needs=(scheduling.MULTIATTACH,), hosts=(PLAIN,)))
    assert f"{CAPABLE}: not a requested host" in str(refused.value)
    assert f"{PLAIN}: lacks {scheduling.MULTIATTACH}" in str(refused.value)
