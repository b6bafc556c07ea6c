"""Pure tests of the object dataclasses: the dicts they send over RPC."""

import datetime
import json

import pytest

from volumesvc import exception
from volumesvc.objects import base, block_device, flavor, instance, instance_action, service

NOW = datetime.datetime(2025, 11, 29, 8, 30, 1, 123456)


def test_to_dict_is_json_and_round_trips():
    svc = service.Service(id=1, uuid="u", host="h", binary="volumesvc-compute",
                          capabilities={"supports_multiattach": True}, last_seen_up=NOW,
                          created_at=NOW)
    values = svc.to_dict()
    assert values["last_seen_up"] == "2025-11-29T08:30:01.123456"
    assert service.Service.from_dict(json.loads(json.dumps(values))) == svc


def test_to_dict_copies_mutable_values():
    inst = instance.Instance(uuid="u", metadata={"a": "1"}, tags=["t"])
    values = inst.to_dict()
    values["metadata"]["a"] = "changed"
    assert inst.metadata == {"a": "1"}


def test_from_dict_ignores_unknown_keys():
    """A newer service may send fields an older one does not know yet."""
    bdm = block_device.BlockDeviceMapping.from_dict(
        {"uuid": "b", "destination_type": "volume", "field_from_the_future": 1})
    assert bdm.uuid == "b" and bdm.is_volume


def test_nested_events_round_trip():
    event = instance_action.InstanceActionEvent(id=1, event="e", start_time=NOW)
    action = instance_action.InstanceAction(id=2, request_id="r", start_time=NOW,
                                            events=[event])
    values = json.loads(json.dumps(action.to_dict()))
    assert values["events"][0]["start_time"] == NOW.isoformat()
    assert instance_action.InstanceAction.from_dict(values) == action


def test_flavor_instance_copy_keys():
    copy = flavor.Flavor(flavorid="1", name="m1.tiny", memory_mb=512, vcpus=1,
                         root_gb=1).instance_copy()
    assert set(copy) == {"flavorid", "name", "vcpus", "memory_mb", "root_gb",
                         "ephemeral_gb", "swap", "extra_specs"}


@pytest.mark.parametrize("given, context_mode, expected", [
    (None, None, "no"), (None, "yes", "yes"), ("only", "yes", "only")])
def test_read_deleted(given, context_mode, expected):
    context = type("Ctx", (), {"read_deleted": context_mode})()
    assert base.read_deleted(context, given) == expected


def test_read_deleted_rejects_nonsense():
    with pytest.raises(exception.Invalid):
        base.read_deleted(None, "maybe")


def test_model_values_renames_metadata():
    assert base.model_values(instance.Instance, {"metadata": {}, "host": "h"}) == {
        "metadata_": {}, "host": "h"}


def test_from_model_copies_only_mutable_values():
    """Dicts and lists are the object's own; immutable values are not copied (cost only)."""
    import types

    flavor_dict, name = {"vcpus": 1}, "a-long-display-name"
    row = types.SimpleNamespace(uuid="u", display_name=name, flavor=flavor_dict,
                                metadata_={"k": "v"}, tags=["t"], deleted=0, launched_at=NOW)
    inst = instance.Instance.from_model(row)
    assert inst.flavor == {"vcpus": 1} and inst.flavor is not flavor_dict
    inst.flavor["vcpus"] = 2
    assert flavor_dict == {"vcpus": 1}
    assert inst.display_name is name and inst.launched_at is NOW
    values = inst.to_dict()
    values["flavor"]["vcpus"] = 3
    assert inst.flavor == {"vcpus": 2}
