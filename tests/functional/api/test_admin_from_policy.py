"""Who is an admin is the policy's ``context_is_admin`` and nothing else.

Handlers that show more to admins (private flavors here) follow the rule an
operator writes, whatever role names the token carries.
"""

import pytest

from tests.functional.stack import Stack


@pytest.fixture
def stack(tmp_path):
    s = Stack(tmp_path, hosts=())
    # The default admin (noauth2 user "admin", role admin) makes a private flavor.
    s.api("POST", "/flavors", {"flavor": {
        "name": "private", "id": "private1", "ram": 64, "vcpus": 1, "disk": 1,
        "os-flavor-access:is_public": False}}, status=200)
    yield s
    s.stop()


def test_by_default_the_admin_role_is_an_admin_and_a_member_is_not(stack):
    stack.api("GET", "/flavors/private1", status=200)
    stack.api("GET", "/flavors/private1", token="u:p", status=404)


def test_a_role_the_operator_names_makes_admins_and_the_admin_role_alone_does_not(stack):
    # Every member is an admin now; the admin role alone would not be.
    stack.set_policy({"context_is_admin": "role:member"})
    stack.api("GET", "/flavors/private1", token="u:p", status=200)
    stack.set_policy({"context_is_admin": "role:operator"})
    stack.api("GET", "/flavors/private1", status=404)
    _, body, _ = stack.api("GET", "/flavors?is_public=none", status=200)
    assert "private1" not in [flavor["id"] for flavor in body["flavors"]]
