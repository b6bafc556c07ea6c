"""GET /flavors/{id}/os-extra_specs: what openstacksdk/OSC read for every flavor.

Regression: ``openstack flavor show 42`` failed with 404 because the route
did not exist.
"""

import pytest

from tests.functional.stack import Stack


@pytest.fixture(scope="module")
def stack(tmp_path_factory):
    s = Stack(tmp_path_factory.mktemp("extra-specs"), hosts=())
    yield s
    s.stop()


def test_extra_specs_of_a_default_flavor(stack):
    _, body, _ = stack.api("GET", "/flavors/42/os-extra_specs", token="u:p", status=200)
    assert body == {"extra_specs": {}}


def test_extra_specs_of_an_admin_made_flavor_and_one_key(stack):
    stack.api("POST", "/flavors", {"flavor": {
        "name": "spec", "id": "spec1", "ram": 64, "vcpus": 1, "disk": 1}}, status=200)
    import sqlalchemy as sa

    from volumesvc.db import models

    with stack.db.writer(stack.admin_context()) as session:
        session.execute(sa.update(models.Flavor).where(models.Flavor.flavorid == "spec1")
                        .values(extra_specs={"hw:cpu_policy": "shared"}))
    _, body, _ = stack.api("GET", "/flavors/spec1/os-extra_specs", status=200)
    assert body == {"extra_specs": {"hw:cpu_policy": "shared"}}
    _, body, _ = stack.api("GET", "/flavors/spec1/os-extra_specs/hw:cpu_policy", status=200)
    assert body == {"hw:cpu_policy": "shared"}
    status, body, _ = stack.api("GET", "/flavors/spec1/os-extra_specs/nope")
    assert status == 404 and "itemNotFound" in body


def test_unknown_flavor_is_404(stack):
    status, body, _ = stack.api("GET", "/flavors/nope/os-extra_specs")
    assert status == 404 and body["itemNotFound"]["code"] == 404
