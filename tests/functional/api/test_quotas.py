"""/limits and /os-quota-sets across their windows, and the quota at boot and unshelve."""

import concurrent.futures

import pytest
from oslo_utils import timeutils

from tests.functional.stack import BLANK_ROOT, Stack
from volumesvc.objects import flavor as flavor_obj
from volumesvc.objects import instance as instance_obj

MEMBER = "member:qp"
ADMIN = "admin:admin"


@pytest.fixture
def stack(tmp_path):
    s = Stack(tmp_path, hosts=())
    yield s
    s.stop()


def _boot(stack, token=MEMBER, name="s", **extra):
    server = {"name": name, "flavorRef": "42", "block_device_mapping_v2": BLANK_ROOT, **extra}
    return stack.api("POST", "/servers", {"server": server}, token=token)


def _set(stack, project, version="2.1", query="", **limits):
    return stack.api("PUT", f"/os-quota-sets/{project}{query}", {"quota_set": limits},
                     version=version, token=ADMIN)


def _absolute(stack, version, token=MEMBER, query=""):
    _, body, _ = stack.api("GET", f"/limits{query}", version=version, token=token, status=200)
    assert body["limits"]["rate"] == []
    return body["limits"]["absolute"]


def test_limits_keys_per_window_and_usage(stack):
    _boot(stack)
    old = _absolute(stack, "2.1")
    assert {"maxImageMeta", "maxPersonality", "maxTotalFloatingIps",
            "maxSecurityGroups"} <= set(old)
    assert (old["maxTotalInstances"], old["maxTotalCores"], old["maxTotalRAMSize"]) == (
        10, 20, 51200)
    assert (old["totalInstancesUsed"], old["totalCoresUsed"], old["totalRAMUsed"]) == (
        1, 1, 128)
    at_2_36 = _absolute(stack, "2.36")
    assert "maxTotalFloatingIps" not in at_2_36 and "maxImageMeta" in at_2_36
    assert "maxImageMeta" not in _absolute(stack, "2.39")
    # openstacksdk (``openstack limits show``) asks with reserved=False.
    assert _absolute(stack, "2.39", query="?reserved=False") == _absolute(stack, "2.39")
    newest = _absolute(stack, "2.57")
    assert "maxPersonality" not in newest and set(newest) == {
        "maxServerGroupMembers", "maxServerGroups", "maxServerMeta", "maxTotalCores",
        "maxTotalInstances", "maxTotalKeypairs", "maxTotalRAMSize", "totalCoresUsed",
        "totalInstancesUsed", "totalRAMUsed", "totalServerGroupsUsed"}


def test_limits_of_another_project_are_for_admins(stack):
    _boot(stack)
    assert _absolute(stack, "2.1", token=ADMIN, query="?tenant_id=qp")["totalInstancesUsed"] == 1
    status, _, _ = stack.api("GET", "/limits?tenant_id=qp", token="other:op")
    assert status == 403


def test_quota_set_show_update_detail_defaults_delete(stack):
    _, body, _ = stack.api("GET", "/os-quota-sets/qp", token=MEMBER, status=200)
    assert body["quota_set"]["id"] == "qp" and body["quota_set"]["instances"] == 10
    assert body["quota_set"]["floating_ips"] == 10, "Nova's network quotas before 2.36"
    status, _, _ = stack.api("PUT", "/os-quota-sets/qp", {"quota_set": {"instances": 3}},
                             token=MEMBER)
    assert status == 403
    _, body, _ = _set(stack, "qp", instances=3, cores="4")
    assert "id" not in body["quota_set"] and body["quota_set"]["instances"] == 3
    _boot(stack)
    _, body, _ = stack.api("GET", "/os-quota-sets/qp/detail", version="2.57", token=MEMBER,
                           status=200)
    assert body["quota_set"]["instances"] == {"in_use": 1, "limit": 3, "reserved": 0}
    assert body["quota_set"]["cores"] == {"in_use": 1, "limit": 4, "reserved": 0}
    assert "injected_files" not in body["quota_set"]
    _, body, _ = stack.api("GET", "/os-quota-sets/qp/defaults", token=MEMBER, status=200)
    assert body["quota_set"]["instances"] == 10
    status, fault, _ = _set(stack, "qp", instances=0)
    assert status == 400 and fault["badRequest"]["message"] == (
        "Quota limit 0 for instances must be greater than or equal to already used and "
        "reserved 1.")
    _set(stack, "qp", instances=0, force=True)
    status, _, _ = _set(stack, "qp", version="2.36", floating_ips=3)
    assert status == 400, "network quotas are gone at 2.36"
    status, _, _ = _set(stack, "qp", instances=-2)
    assert status == 400
    stack.api("DELETE", "/os-quota-sets/qp", token=ADMIN, status=202)
    _, body, _ = stack.api("GET", "/os-quota-sets/qp", token=MEMBER, status=200)
    assert body["quota_set"]["instances"] == 10


def test_user_quota_is_bounded_by_the_project_and_enforced(stack):
    _set(stack, "qp", instances=5)
    status, fault, _ = _set(stack, "qp", query="?user_id=member", instances=6)
    assert status == 400 and fault["badRequest"]["message"] == (
        "Quota limit 6 for instances must be less than or equal to 5.")
    _set(stack, "qp", query="?user_id=member", instances=1)
    _, body, _ = stack.api("GET", "/os-quota-sets/qp?user_id=member", token=MEMBER,
                           status=200)
    assert body["quota_set"]["instances"] == 1
    _boot(stack)
    status, fault, _ = _boot(stack)
    assert status == 403 and fault["forbidden"]["message"] == (
        "Quota exceeded for instances: Requested 1, but already used 1 of 1 instances")
    # Another user of the project still has the project's room.
    _boot(stack, token="other:qp")


def test_boot_past_the_instances_quota_is_403_and_max_count_is_lowered(stack):
    _set(stack, "qp", instances=3)
    _, body, _ = _boot(stack, min_count=1, max_count=5, return_reservation_id=True)
    _, listed, _ = stack.api("GET", "/servers", token=MEMBER, status=200)
    assert len(listed["servers"]) == 3
    status, fault, _ = _boot(stack)
    assert status == 403 and fault["forbidden"]["message"] == (
        "Quota exceeded for instances: Requested 1, but already used 3 of 3 instances")
    _set(stack, "qp", instances=10, ram=128 * 4)
    status, fault, _ = _boot(stack, min_count=2)
    assert status == 403 and fault["forbidden"]["message"] == (
        "Quota exceeded for ram: Requested 256, but already used 384 of 512 ram")


def test_concurrent_boots_never_pass_the_quota(stack):
    """40 boots at once against a quota of 30 leave exactly 30 servers."""
    _set(stack, "qp", instances=30, cores=-1, ram=-1)
    with concurrent.futures.ThreadPoolExecutor(max_workers=40) as pool:
        statuses = list(pool.map(lambda i: _boot(stack, name=f"c{i}")[0], range(40)))
    assert sorted(statuses) == [202] * 30 + [403] * 10
    _, body, _ = stack.api("GET", "/os-quota-sets/qp/detail", token=MEMBER, status=200)
    assert body["quota_set"]["instances"]["in_use"] == 30


def test_a_boot_whose_quota_count_loses_a_deadlock_is_run_again(stack, monkeypatch):
    """Regression: on MariaDB a retried boot after a database restart was a 500 when
    InnoDB chose its quota count (share locks on the project's instance rows, beside
    conductors updating them) as a deadlock's victim. The check and the rows'
    transaction are run again; a deadlock that outlasts the retries is a 503."""
    from oslo_db import exception as db_exc

    from volumesvc import quota

    real, calls = quota._instance_usage, []

    def deadlock_first(*args, **kwargs):
        calls.append(1)
        if len(calls) in (1, 3):  # the early check's first try, the locked count's first
            raise db_exc.DBDeadlock()
        return real(*args, **kwargs)

    monkeypatch.setattr(quota, "_instance_usage", deadlock_first)
    status, body, _ = _boot(stack, name="deadlocked")
    assert status == 202, body
    assert len(calls) == 4
    _, listed, _ = stack.api("GET", "/servers", token=MEMBER, status=200)
    assert [s["name"] for s in listed["servers"]] == ["deadlocked"]

    def always(*args, **kwargs):
        raise db_exc.DBDeadlock()

    monkeypatch.setattr(quota, "_instance_usage", always)
    status, fault, _ = _boot(stack, name="never")
    assert status == 503, fault
    (message,) = [v["message"] for v in fault.values()]
    assert "nothing was changed" in message


def _offloaded(stack, project, user):
    flavor = flavor_obj.get_by_flavorid(stack.db, stack.admin_context(), "42")
    return instance_obj.create(stack.db, stack.admin_context(), {
        "project_id": project, "user_id": user, "display_name": "shelved",
        "vm_state": "shelved_offloaded", "power_state": 4, "flavor": flavor.instance_copy(),
        "flavor_id": flavor.id, "launched_at": timeutils.utcnow()})


def test_unshelve_checks_cores_and_ram_again(stack):
    offloaded = _offloaded(stack, "qp", "member")
    _set(stack, "qp", cores=1)
    _boot(stack)  # the offloaded server holds no cores: this one fits
    status, fault, _ = stack.api("POST", f"/servers/{offloaded.uuid}/action",
                                 {"unshelve": None}, token=MEMBER)
    assert status == 403 and fault["forbidden"]["message"] == (
        "Quota exceeded for cores: Requested 1, but already used 1 of 1 cores")
    assert instance_obj.get_by_uuid(stack.db, stack.admin_context(),
                                    offloaded.uuid).task_state is None
    _set(stack, "qp", cores=2)
    stack.api("POST", f"/servers/{offloaded.uuid}/action", {"unshelve": None},
              token=MEMBER, status=202)
