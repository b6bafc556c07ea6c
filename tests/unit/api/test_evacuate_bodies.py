"""The ``evacuate`` bodies and answers per microversion, as Nova's (no service needed)."""

import pytest

from volumesvc.api import errors, validation
from volumesvc.api import microversions as mv
from volumesvc.api.handlers import server_actions, server_evacuate

HANDLER = server_evacuate.ACTIONS["evacuate"]


def _check(version, body):
    return validation.validate_body(HANDLER, mv.parse(version), body)


@pytest.mark.parametrize("version,body", [
    ("2.1", {"onSharedStorage": False}),
    ("2.1", {"host": "h1", "onSharedStorage": "true", "adminPass": "secret"}),
    ("2.13", {"onSharedStorage": True}),
    ("2.14", {}),
    ("2.14", {"host": "h1", "adminPass": "secret"}),
    ("2.29", {"host": "h1", "force": True}),
    ("2.67", {"host": "h1", "force": "false"}),
    ("2.68", {"host": "h1"}),
    ("2.95", {}),
])
def test_taken(version, body):
    assert _check(version, body) == body


@pytest.mark.parametrize("version,body,key", [
    ("2.1", {"host": "h1"}, "onSharedStorage"),
    ("2.13", {}, "onSharedStorage"),
    ("2.14", {"onSharedStorage": False}, "onSharedStorage"),
    ("2.28", {"host": "h1", "force": True}, "force"),
    ("2.68", {"host": "h1", "force": True}, "force"),
    ("2.95", {"host": "h1", "force": False}, "force"),
    ("2.95", {"host": ""}, "host"),
    ("2.95", {"target_state": "stopped"}, "target_state"),
])
def test_refused(version, body, key):
    with pytest.raises(errors.APIError) as caught:
        _check(version, body)
    assert caught.value.status == 400 and key in caught.value.message


def _answers(version):
    schema, _ = validation._pick(server_actions.run_server_action, validation.RESPONSE,
                                 mv.parse(version))
    validator = validation._VALIDATOR(schema)
    return [validator.is_valid(body) for body in ({"adminPass": "x"}, {"adminPass": None},
                                                  None)]


@pytest.mark.parametrize("version,expected", [
    ("2.1", [True, True, True]),
    ("2.13", [True, True, True]),
    ("2.14", [False, False, True]),
    ("2.95", [False, False, True]),
])
def test_the_password_is_answered_below_2_14_only(version, expected):
    assert _answers(version) == expected
