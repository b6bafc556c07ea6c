"""Versioned bodies come from one table: the view and the declared schema never drift.

Every representation is rendered at every microversion 2.1..MAX, in every
variant its ``when`` rows allow, and checked against the response schema the
handler declares for that version (``response_validation = error``): a row
whose value disagrees with its schema, or a handler whose windows do not
follow the table, fails here.
"""

import datetime
import itertools

import flask
import pytest

from volumesvc.api import errors, validation
from volumesvc.api import microversions as mv
from volumesvc.api.handlers import flavors as flavor_handlers
from volumesvc.api.handlers import instance_actions as action_handlers
from volumesvc.api.handlers import servers as server_handlers
from volumesvc.api.handlers import services as service_handlers
from volumesvc.api.handlers import volume_attachments as attachment_handlers
from volumesvc.api.representation import Field, Representation, attr, next_version
from volumesvc.api.request import ApiRequest
from volumesvc.api.views import flavors as flavor_views
from volumesvc.api.views import instance_actions as action_views
from volumesvc.api.views import servers as server_views
from volumesvc.api.views import services as service_views
from volumesvc.api.views import volume_attachments as attachment_views
from volumesvc.conf import get_conf
from volumesvc.context import RequestContext
from volumesvc.objects.block_device import BlockDeviceMapping
from volumesvc.objects.flavor import Flavor
from volumesvc.objects.instance import Instance
from volumesvc.objects.instance_action import InstanceAction, InstanceActionEvent
from volumesvc.objects.instance_fault import InstanceFault
from volumesvc.objects.service import Service

ALL_VERSIONS = [mv.parse(text) for text, _name, _doc in mv.VERSIONS]
NOW = datetime.datetime(2026, 1, 2, 3, 4, 5, 678901)
UUID = "6a3c2bb4-0000-4000-8000-000000000001"
VOLUME = "5a1e0000-0000-4000-8000-000000000002"
CONF = get_conf(default_config_files=[])


class _Deps:
    conf = CONF


def _req(version, *, admin=True):
    context = RequestContext(user_id="u", project_id="p", is_admin=admin)
    return ApiRequest(context=context, version=version, body=None, query={}, deps=_Deps(),
                      project_id="p")


@pytest.fixture(autouse=True)
def _flask_request():
    """Links are built from the request's URL root."""
    with flask.Flask(__name__).test_request_context("/v2.1/p/servers"):
        yield


def _check(handler, version, body):
    validation.validate_response(handler, version, body, "error")


def _instance(vm_state, image_ref):
    return Instance(
        uuid=UUID, project_id="p", user_id="u", display_name="vm", display_description=None,
        hostname="vm", host="compute-1", node="node-1", availability_zone=None,
        vm_state=vm_state, task_state=None, power_state=1, image_ref=image_ref,
        flavor={"flavorid": "1", "vcpus": 1, "memory_mb": 512, "root_gb": 1, "name": "tiny",
                "extra_specs": {"hw:cpu_policy": "shared"}},
        root_device_name="/dev/vda", launched_at=NOW, locked=True, locked_reason="why",
        metadata={"k": "v"}, reservation_id="r-abcdefgh", launch_index=0, tags=["t"],
        instance_name="instance-00000001", created_at=NOW)


_BDMS = [BlockDeviceMapping(uuid=UUID, volume_id=VOLUME, delete_on_termination=True),
         BlockDeviceMapping(uuid=UUID, volume_id=None, source_type="image")]


@pytest.mark.parametrize("version", ALL_VERSIONS, ids=str)
def test_server_bodies_match_their_schema_at_every_version(version):
    cases = itertools.product([True, False], [True, False], [None, "UP"],
                              ["active", "error", "stopped"], ["image-1", None])
    for admin, extended, host_status, vm_state, image_ref in cases:
        req = _req(version, admin=admin)
        fault = InstanceFault(code=500, message="boom", details="trace", created_at=NOW)
        for show, handler in ((True, server_handlers.show_server),
                              (False, server_handlers.list_servers_detail)):
            server = server_views.detail(req, _instance(vm_state, image_ref), bdms=_BDMS,
                                         fault=fault, show=show, extended=extended,
                                         host_status=host_status)
            body = {"server": server} if show else {"servers": [server]}
            _check(handler, version, body)
            assert ("server_groups" in server) == (show and version >= mv.parse("2.71"))
            assert ("OS-EXT-SRV-ATTR:host" in server) == extended


@pytest.mark.parametrize("version", ALL_VERSIONS, ids=str)
def test_attachment_bodies_match_their_schema_at_every_version(version):
    req = _req(version)
    for device, tag in itertools.product(["/dev/vdb", None], [None, "data"]):
        bdm = BlockDeviceMapping(uuid=UUID, volume_id=VOLUME, device_name=device, tag=tag,
                                 attachment_id=UUID)
        item = attachment_views.attachment(req, bdm, UUID)
        _check(attachment_handlers.show_volume_attachment, version, {"volumeAttachment": item})
        _check(attachment_handlers.list_volume_attachments, version,
               {"volumeAttachments": [item]})
        created = {"volumeAttachment": attachment_views.created(
            req, {"device_name": device, "tag": tag}, UUID, VOLUME)}
        if version >= mv.parse("2.101"):
            created = None
        _check(attachment_handlers.create_volume_attachment, version, created)


@pytest.mark.parametrize("version", ALL_VERSIONS, ids=str)
def test_flavor_bodies_match_their_schema_at_every_version(version):
    req = _req(version)
    for swap, extra_specs in itertools.product([0, 512], [True, False]):
        flavor = Flavor(flavorid="1", name="tiny", memory_mb=512, vcpus=1, swap=swap,
                        description=None, extra_specs={"a": "b"})
        detail = flavor_views.detail(req, flavor, extra_specs and version >= mv.parse("2.61"))
        _check(flavor_handlers.list_flavors, version,
               {"flavors": [flavor_views.brief(req, flavor)]})
        _check(flavor_handlers.list_flavors_detail, version, {"flavors": [detail]})
        _check(flavor_handlers.show_flavor, version, {"flavor": detail})
        _check(flavor_handlers.create_flavor, version, {"flavor": detail})


@pytest.mark.parametrize("version", ALL_VERSIONS, ids=str)
def test_instance_action_bodies_match_their_schema_at_every_version(version):
    req = _req(version)
    events = [InstanceActionEvent(event="compute_attach_volume", start_time=NOW,
                                  result="Success", traceback="tb", host="h", details="d"),
              InstanceActionEvent(event="conductor_attach_volume")]
    action = InstanceAction(action="attach_volume", instance_uuid=UUID, request_id="req-1",
                            user_id="u", project_id="p", start_time=NOW, events=events)
    _check(action_handlers.list_instance_actions, version,
           {"instanceActions": [action_views.action(req, action)]})
    for shown, see_all, details in itertools.product([True, False], repeat=3):
        body = action_views.action_with_events(
            req, action, events=events if shown else None, project_id="p", see_all=see_all,
            details=details and version >= mv.parse("2.84"))
        _check(action_handlers.show_instance_action, version, {"instanceAction": body})


@pytest.mark.parametrize("version", ALL_VERSIONS, ids=str)
def test_service_bodies_match_their_schema_at_every_version(version):
    req = _req(version)
    for binary in ("volumesvc-compute", "volumesvc-conductor"):
        service = Service(id=7, uuid=UUID, host="h", binary=binary, last_seen_up=NOW)
        body = service_views.service(req, service)
        _check(service_handlers.list_services, version, {"services": [body]})
        if version >= mv.V2_53_SERVICE_UUIDS:
            _check(service_handlers.update_service, version, {"service": body})


# --- the proof: one row at a made-up next microversion ---------------------------------

def test_a_new_field_is_one_row_and_both_view_and_schema_follow(monkeypatch):
    """Add ``color`` at MAX+1 with one row: body and schema change there, not before."""
    original = server_views.SERVER
    rows_before = len(original.fields)
    future = next_version(mv.MAX_VERSION)
    server = original.with_fields(Field("color", {"type": "string"}, lambda i, ctx: "blue",
                                        first=future))

    def render(version):
        return server.render(version, _instance("active", "image-1"), view="show",
                             req=_req(version), bdms=_BDMS, fault=None, extended=False,
                             host_status=None, status="ACTIVE", zone=None)

    new_body, old_body = render(future), render(mv.MAX_VERSION)
    assert new_body["color"] == "blue"
    assert "color" not in old_body
    assert {k: v for k, v in new_body.items() if k != "color"} == old_body

    def handler_for(entries):
        return validation.windows(validation.response_body_schema, entries)(lambda req: None)

    monkeypatch.setattr(mv, "MAX_VERSION", future)
    handler = handler_for(server.windows(server_handlers.schema.show_server_response,
                                         view="show"))
    assert server.boundaries("show")[-1] == future
    _check(handler, future, {"server": new_body})
    _check(handler, mv.before(future), {"server": old_body})
    with pytest.raises(errors.APIError):  # required from its version on
        _check(handler, future, {"server": old_body})
    with pytest.raises(errors.APIError):  # unknown before it
        _check(handler, mv.before(future), {"server": new_body})
    monkeypatch.undo()

    # The real table is untouched.
    assert server_views.SERVER is original and len(original.fields) == rows_before
    assert "color" not in original.schema(future, "show")["properties"]
    assert future not in original.boundaries("show")


# --- table rules ---------------------------------------------------------------------------

def test_rows_of_one_name_must_agree_where_they_overlap():
    with pytest.raises(ValueError, match="disagree"):
        Representation("thing", (
            Field("a", {"type": "string"}, attr("a")),
            Field("a", {"type": "integer"}, attr("a"), first=mv.parse("2.5")),
        ))


def test_windows_start_where_rows_start_or_end():
    rep = Representation("thing", (
        Field("a", {"type": "string"}, attr("a"), last=mv.parse("2.9")),
        Field("b", {"type": "string"}, attr("b"), first=mv.parse("2.20"), views=("x",)),
    ))
    assert [str(v) for v in rep.boundaries()] == ["2.1", "2.10"]
    assert [str(v) for v in rep.boundaries("x")] == ["2.1", "2.10", "2.20"]
    entries = rep.windows(lambda item, version: item, view="x", first=mv.parse("2.5"))
    assert [(str(v), sorted(s["properties"])) for v, s in entries] == [
        ("2.5", ["a"]), ("2.10", []), ("2.20", ["b"])]


def test_conditional_row_is_optional_and_first_applicable_row_places_the_key():
    rep = Representation("thing", (
        Field("a", {"type": "string"}, lambda s, ctx: "early", when=lambda s, ctx: ctx.admin),
        Field("b", {"type": "string"}, lambda s, ctx: "b"),
        Field("a", {"type": "string"}, lambda s, ctx: "late", first=mv.parse("2.3")),
    ))
    v2_3 = mv.parse("2.3")
    assert list(rep.render(v2_3, None, admin=True).items()) == [("a", "early"), ("b", "b")]
    assert list(rep.render(v2_3, None, admin=False).items()) == [("b", "b"), ("a", "late")]
    assert rep.render(mv.MIN_VERSION, None, admin=False) == {"b": "b"}
    assert rep.schema(mv.MIN_VERSION)["required"] == ["b"]
    assert sorted(rep.schema(v2_3)["required"]) == ["a", "b"]
