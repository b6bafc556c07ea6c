"""Schema declaration rules and request/response validation."""

import importlib
import pkgutil

import pytest

import volumesvc.api.schemas as schemas_pkg
from volumesvc.api import errors, validation
from volumesvc.api import microversions as mv

OBJ = validation.object_({"a": {"type": "string"}})


def test_object_without_additional_properties_is_rejected():
    with pytest.raises(ValueError, match="additionalProperties"):
        validation.check_schema({"type": "object", "properties": {"a": {
            "type": "object", "properties": {}}}, "additionalProperties": False})


def test_every_schema_constant_forbids_unknown_keys():
    for info in pkgutil.iter_modules(schemas_pkg.__path__):
        module = importlib.import_module(f"{schemas_pkg.__name__}.{info.name}")
        for name, value in vars(module).items():
            if isinstance(value, dict) and not name.startswith("_"):
                validation.check_schema(value, f"{info.name}.{name}")


def test_overlapping_ranges_are_rejected():
    with pytest.raises(ValueError, match="overlapping"):
        @validation.schema(OBJ, mv.parse("2.1"), mv.parse("2.10"))
        @validation.schema(OBJ, mv.parse("2.10"))
        def handler(req):
            pass


def test_gaps_between_ranges_are_rejected():
    with pytest.raises(ValueError, match="gap"):
        @validation.schema(OBJ, mv.parse("2.1"), mv.parse("2.10"))
        @validation.schema(OBJ, mv.parse("2.12"))
        def handler(req):
            pass


def _handler():
    @validation.query_schema(validation.object_({"host": validation.multi_params(
        {"type": "string"})}), strict_from=mv.V2_75_STRICT_QUERY)
    @validation.schema(OBJ)
    @validation.response_body_schema(OBJ)
    def handler(req):
        pass
    return handler


def test_body_validation():
    handler = _handler()
    assert validation.validate_body(handler, mv.parse("2.1"), {"a": "x"}) == {"a": "x"}
    with pytest.raises(errors.APIError) as info:
        validation.validate_body(handler, mv.parse("2.1"), {"b": 1})
    assert info.value.status == 400


def test_query_unknown_keys_stripped_before_2_75_and_rejected_after():
    handler = _handler()
    query = {"host": ["h"], "colour": ["blue"]}
    assert validation.validate_query(handler, mv.parse("2.74"), query) == {"host": ["h"]}
    with pytest.raises(errors.APIError):
        validation.validate_query(handler, mv.parse("2.75"), query)


def test_query_strict_from_defaults_to_2_102_and_none_never_refuses():
    @validation.query_schema(validation.object_({}))
    def show(req):
        pass

    @validation.query_schema(validation.object_({}), strict_from=None)
    def document(req):
        pass

    query = {"colour": ["blue"]}
    assert validation.validate_query(show, mv.parse("2.101"), query) == {}
    with pytest.raises(errors.APIError):
        validation.validate_query(show, mv.parse("2.102"), query)
    assert validation.validate_query(document, mv.MAX_VERSION, query) == {}


@pytest.mark.parametrize("mode, raises", [("error", True), ("warn", False), ("ignore", False)])
def test_response_validation_modes(mode, raises):
    handler = _handler()
    if raises:
        with pytest.raises(errors.APIError) as info:
            validation.validate_response(handler, mv.parse("2.1"), {"b": 1}, mode)
        assert info.value.status == 500
    else:
        validation.validate_response(handler, mv.parse("2.1"), {"b": 1}, mode)


def test_versioned_handler_merges_window_schemas():
    from volumesvc.api.handlers import services

    kinds = services.update_service._schemas
    assert [str(low) for low, _h, _s, _o in kinds["body"]] == ["2.1", "2.11", "2.53"]
