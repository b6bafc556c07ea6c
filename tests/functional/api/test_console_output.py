"""os-getConsoleOutput through the whole stack: API → compute RPC → driver → console.log.

The compute runs the libvirt driver on the fake binding, whose domains write
a fixed console text at start naming the disk they boot from, so these
tests also see that a server boots from its boot index 0 volume.
"""

import pytest
from oslo_policy import policy as oslo_policy

from tests.functional.stack import BLANK_ROOT
from volumesvc.objects import block_device as bdm_obj

OWNER = "u1:p1"


def _console(stack, server, body, *, token=OWNER, status=None):
    return stack.api("POST", f"/servers/{server}/action", {"os-getConsoleOutput": body},
                     token=token, status=status)


def _root_volume(stack, server):
    (bdm,) = bdm_obj.list_by_instance(stack.db, stack.admin_context(), server)
    return bdm.volume_id


def test_whole_log_names_the_root_volume_it_booted_from(stack, server):
    _, body, _ = _console(stack, server, {}, status=200)
    lines = body["output"].split("\n")
    assert lines[0].startswith("fake firmware: starting instance-") and server in lines[0]
    assert lines[1] == f"Booting from Hard Disk sda (serial {_root_volume(stack, server)})..."
    assert lines[-2:] == ["fake guest: ready", ""]
    # The guest's carriage returns are stripped, as Nova strips control characters.
    assert "\r" not in body["output"]
    for unlimited in ({"length": None}, {"length": -1}, {"length": "-1"}):
        assert _console(stack, server, unlimited, status=200)[1] == body


@pytest.mark.parametrize(("length", "expected"), [
    (3, "fake guest: kernel started on ttyS0\nfake guest: ready\n"),
    ("2", "fake guest: ready\n"),
    (1, ""),
    (0, ""),
    (10 ** 6, None),
], ids=["3", "2-as-text", "1", "0", "more-than-there-are"])
def test_last_lines(stack, server, length, expected):
    whole = _console(stack, server, {}, status=200)[1]["output"]
    output = _console(stack, server, {"length": length}, status=200)[1]["output"]
    assert output == (whole if expected is None else expected)
    # tempest counts lines with split("\n"): length N gives N.
    if 0 < int(length) < 5:
        assert len(output.split("\n")) == int(length)


@pytest.mark.parametrize("body", [
    {"length": -2}, {"length": "-2"}, {"length": "abc"}, {"length": "1.5"}, {"length": 1.5},
    {"length": True}, {"length": []}, {"length": " 3"}, {"lines": 3}, None, "3",
])
def test_bad_bodies_are_400(stack, server, body):
    _, fault, _ = _console(stack, server, body, status=400)
    assert fault["badRequest"]["code"] == 400


def test_a_bad_length_is_400_even_for_a_server_that_does_not_exist(stack):
    _console(stack, "6a1f0d7e-33a5-4d9c-9a4e-7b1b7c1f4c00", {"length": -2}, status=400)


def test_another_projects_server_and_unknown_servers_are_404(stack, server):
    _, fault, _ = _console(stack, server, {}, token="u2:p2", status=404)
    assert fault["itemNotFound"]["message"] == f"Instance {server} could not be found."
    _console(stack, "6a1f0d7e-33a5-4d9c-9a4e-7b1b7c1f4c00", {}, status=404)
    _console(stack, "not-a-uuid", {}, status=404)
    # An admin sees any project's console.
    _console(stack, server, {"length": 1}, token="admin:admin", status=200)


def test_policy(stack, server):
    enforcer = stack.app.extensions["volumesvc"].enforcer
    enforcer.load_rules()
    enforcer.set_rules(oslo_policy.Rules.from_dict(
        {"os_compute_api:os-console-output": "role:admin"}), overwrite=False)
    _, fault, _ = _console(stack, server, {}, status=403)
    assert "os_compute_api:os-console-output" in fault["forbidden"]["message"]
    _console(stack, server, {}, token="admin:admin", status=200)


def test_a_stopped_server_shows_its_last_run_and_a_start_begins_a_new_log(stack, server):
    before = _console(stack, server, {}, status=200)[1]["output"]
    stack.api("POST", f"/servers/{server}/action", {"os-stop": None}, token=OWNER, status=202)
    stack.wait_for_server_status(server, "SHUTOFF")
    assert _console(stack, server, {}, status=200)[1]["output"] == before
    stack.api("POST", f"/servers/{server}/action", {"os-start": None}, token=OWNER,
              status=202)
    stack.wait_for_server_status(server, "ACTIVE")
    assert _console(stack, server, {}, status=200)[1]["output"] == before


def test_a_server_without_a_host_is_409(stack):
    server = stack.boot(stack.context(), BLANK_ROOT)
    stack.wait_instance(server, "active")
    stack.api("POST", f"/servers/{server}/action", {"shelve": None}, token=OWNER, status=202)
    stack.wait_for_server_status(server, "SHELVED_OFFLOADED", timeout=30)
    _, fault, _ = _console(stack, server, {}, status=409)
    assert fault["conflictingRequest"]["message"] == f"Instance {server} is not ready"






def test_a_server_whose_guest_is_gone_from_its_compute_is_404(stack, server):
    dom = stack.computes["fn-compute"].manager.driver.host.get_connection() \
        .lookupByUUIDString(server)
    dom.destroy()
    dom.undefine()
    _, fault, _ = _console(stack, server, {}, status=404)
    assert fault["itemNotFound"]["message"] == f"Instance {server} could not be found."
