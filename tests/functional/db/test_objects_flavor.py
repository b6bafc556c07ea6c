"""Flavors on every backend: defaults from the migration, filters, create/destroy."""

import pytest

from volumesvc import exception
from volumesvc.objects import flavor


def test_default_flavors(db, ctx):
    nano = flavor.get_by_flavorid(db, ctx, "42")
    assert (nano.name, nano.memory_mb, nano.vcpus, nano.root_gb) == ("m1.nano", 128, 1, 1)
    assert flavor.get_by_id(db, ctx, nano.id) == nano
    assert nano.instance_copy() == {"flavorid": "42", "name": "m1.nano", "vcpus": 1,
                                    "memory_mb": 128, "root_gb": 1, "ephemeral_gb": 0,
                                    "swap": 0, "extra_specs": {}}
    with pytest.raises(exception.FlavorNotFound):
        flavor.get_by_flavorid(db, ctx, "nope")


def test_list_filters_and_pagination(db, ctx):
    ids = [f.flavorid for f in flavor.list_flavors(db, ctx)]
    assert ids == ["1", "2", "3", "4", "42", "5"]
    assert [f.flavorid for f in flavor.list_flavors(db, ctx, min_memory_mb=8192)] == ["4", "5"]
    assert [f.flavorid for f in flavor.list_flavors(db, ctx, min_root_gb=40)] == ["3", "4", "5"]
    page1 = flavor.list_flavors(db, ctx, limit=4)
    page2 = flavor.list_flavors(db, ctx, limit=4, marker=page1[-1].flavorid)
    assert [f.flavorid for f in page1 + page2] == ids
    with pytest.raises(exception.MarkerNotFound):
        flavor.list_flavors(db, ctx, marker="nope")
    flavor.create(db, ctx, {"flavorid": "p1", "name": "private", "memory_mb": 1, "vcpus": 1,
                            "is_public": False})
    assert [f.flavorid for f in flavor.list_flavors(db, ctx, is_public=False)] == ["p1"]
    assert len(flavor.list_flavors(db, ctx, is_public=None)) == 7


def test_create_duplicate_and_destroy(db, ctx):
    made = flavor.create(db, ctx, {"flavorid": 100, "name": "big", "memory_mb": 1024,
                                   "vcpus": 2, "root_gb": 10,
                                   "extra_specs": {"hw:cpu_policy": "shared"}})
    assert made.flavorid == "100" and made.extra_specs == {"hw:cpu_policy": "shared"}
    assert flavor.Flavor.from_dict(made.to_dict()) == made
    with pytest.raises(exception.FlavorExists):
        flavor.create(db, ctx, {"flavorid": "101", "name": "big", "memory_mb": 1, "vcpus": 1})
    with pytest.raises(exception.FlavorExists):
        flavor.create(db, ctx, {"flavorid": "100", "name": "other", "memory_mb": 1, "vcpus": 1})
    flavor.destroy(db, ctx, "100")
    with pytest.raises(exception.FlavorNotFound):
        flavor.get_by_flavorid(db, ctx, "100")
    with pytest.raises(exception.FlavorNotFound):
        flavor.destroy(db, ctx, "100")
