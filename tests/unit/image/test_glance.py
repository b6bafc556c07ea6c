"""GlanceAPI's own logic: URLs, auth, property encoding, error translation, shapes.

Only the HTTP boundary is replaced: the keystoneauth session's ``request`` is
a stub, so what is tested is what the adapter sends and does with answers.
"""

import json
from unittest import mock

import pytest
from keystoneauth1 import exceptions as ks_exception

from tests.fixtures.glance import FakeGlance
from volumesvc import exception
from volumesvc.conf import get_conf
from volumesvc.context import RequestContext
from volumesvc.image import glance

IMG = "33333333-3333-3333-3333-333333333333"


class _Response:
    def __init__(self, status, body=None):
        self.status_code = status
        self._body = body
        self.text = json.dumps(body) if body is not None else ""

    def json(self):
        return self._body


@pytest.fixture
def conf():
    conf = get_conf()
    conf.set_override("auth_strategy", "noauth", "glance")
    conf.set_override("endpoint_override", "http://127.0.0.1:9292/v2/", "glance")
    return conf


@pytest.fixture
def ctx():
    return RequestContext(user_id="alice", project_id="p1")


@pytest.fixture
def session():
    return mock.Mock()


@pytest.fixture
def api(conf, session):
    api = glance.GlanceAPI(conf)
    api._session = session
    return api


def _flat(status="active", **extra):
    return dict({"id": IMG, "name": "n", "status": status, "size": 0, "owner": "p1",
                 "disk_format": "raw", "container_format": "bare"}, **extra)


def test_get_splits_custom_properties(api, session, ctx):
    session.request.return_value = _Response(200, _flat(bdm_v2="True"))
    image = api.get(ctx, IMG)
    assert image["properties"] == {"bdm_v2": "True"}
    assert image["status"] == "active"
    args, kwargs = session.request.call_args
    assert args == (f"/v2/images/{IMG}", "GET")
    assert kwargs["endpoint_override"] == "http://127.0.0.1:9292"
    assert kwargs["auth"] is None


def test_create_sends_owner_and_string_properties_then_uploads_empty(api, session, ctx):
    session.request.side_effect = [_Response(201, _flat("queued")), _Response(204),
                                   _Response(200, _flat())]
    mapping = [{"boot_index": 0, "volume_id": None}]
    api.create(ctx, name="snap", owner="p1",
               properties={"bdm_v2": True, "block_device_mapping": mapping, "n": 3})
    create, upload, _get = session.request.call_args_list
    body = create.kwargs["json"]
    assert body["owner"] == "p1"
    assert body["bdm_v2"] == "True"
    assert json.loads(body["block_device_mapping"]) == mapping
    assert body["n"] == "3"
    assert upload.args == (f"/v2/images/{IMG}/file", "PUT")
    assert upload.kwargs["data"] == b""


@pytest.mark.parametrize("delete_status", [204, 500])
def test_a_record_whose_upload_failed_is_deleted(api, session, ctx, delete_status):
    session.request.side_effect = [_Response(201, _flat("queued")),
                                   _Response(500, {"message": "disk full"}),
                                   _Response(delete_status)]
    with pytest.raises(exception.GlanceAPIError):
        api.create(ctx, name="snap", owner="p1")
    _create, _upload, delete = session.request.call_args_list
    assert delete.args == (f"/v2/images/{IMG}", "DELETE")


def test_create_refuses_core_attribute_as_property(api, ctx):
    with pytest.raises(exception.Invalid):
        api.create(ctx, name="x", owner="p", properties={"size": 3})


@pytest.mark.parametrize("status,exc", [
    (404, exception.ImageNotFound), (400, exception.Invalid), (403, exception.Forbidden),
    (409, exception.Conflict), (500, exception.GlanceAPIError)])
def test_error_translation(api, session, ctx, status, exc):
    session.request.return_value = _Response(status, {"message": "no"})
    with pytest.raises(exc):
        api.get(ctx, IMG)


# What Glance 33 answers a POST /v2/images with an ``os_glance_`` property, by body type.
_RESERVED_HTML = """<html>
 <head>
  <title>403 Forbidden</title>
 </head>
 <body>
  <h1>403 Forbidden</h1>
  Access was denied to this resource.<br /><br />
Attribute &#x27;os_glance_foo&#x27; is reserved.


 </body>
</html>"""
_RESERVED_TEXT = ("403 Forbidden\n\nAccess was denied to this resource.\n\n"
                  "Attribute 'os_glance_foo' is reserved.\n\n   ")
_RESERVED_JSON = json.dumps({"code": 403, "title": "Forbidden", "message":
                             "Access was denied to this resource.\n\nAttribute "
                             "'os_glance_foo' is reserved."})


@pytest.mark.parametrize("body", [_RESERVED_HTML, _RESERVED_TEXT, _RESERVED_JSON],
                         ids=["html", "text", "json"])
def test_a_refusal_carries_glances_reason_as_plain_text(api, session, ctx, body):
    """Regression: the 403 passed Glance's HTML page on into the Nova fault."""
    response = _Response(403)
    response.text = body
    session.request.return_value = response
    with pytest.raises(exception.Forbidden) as raised:
        api.create(ctx, name="x", owner="p", properties={"os_glance_foo": "1"})
    assert str(raised.value) == ("Glance refused the request: Access was denied to this "
                                 "resource. Attribute 'os_glance_foo' is reserved.")


def test_an_error_without_a_body_names_its_status():
    assert glance.error_text(502, "") == "HTTP 502"


def test_connection_error(api, session, ctx):
    session.request.side_effect = ks_exception.ConnectFailure("refused")
    with pytest.raises(exception.GlanceConnectionFailed):
        api.delete(ctx, IMG)


def test_noauth_needs_endpoint(conf, ctx):
    conf.set_override("endpoint_override", None, "glance")
    with pytest.raises(exception.ConfigInvalid):
        glance.GlanceAPI(conf).get(ctx, IMG)


def test_keystone_uses_the_users_token(conf, session):
    conf.set_override("auth_strategy", "keystone", "glance")
    api = glance.GlanceAPI(conf)
    api._session = session
    session.request.return_value = _Response(200, _flat())
    api.get(RequestContext(user_id="u", project_id="p", auth_token="tok"), IMG)
    auth = session.request.call_args.kwargs["auth"]
    assert auth.get_token(None) == "tok"


def test_image_url(api, ctx):
    assert api.image_url(ctx, IMG) == f"http://127.0.0.1:9292/images/{IMG}"


def test_list_follows_next(api, session, ctx):
    session.request.side_effect = [
        _Response(200, {"images": [_flat()], "next": "/v2/images?marker=" + IMG}),
        _Response(200, {"images": []})]
    assert [i["id"] for i in api.list(ctx, bdm_v2=True)] == [IMG]
    assert session.request.call_args_list[0].kwargs["params"]["bdm_v2"] == "True"
    assert session.request.call_args_list[1].kwargs["params"]["marker"] == IMG


def test_fake_has_the_same_public_methods():
    public = {n for n in dir(glance.GlanceAPI) if not n.startswith("_")}
    assert public <= {n for n in dir(FakeGlance) if not n.startswith("_")}


def test_fake_zero_byte_image_is_active(ctx):
    fake = FakeGlance()
    image = fake.create(ctx, name="s", owner="p", properties={"bdm_v2": True})
    assert (image["status"], image["size"]) == ("active", 0)
    assert image["properties"] == {"bdm_v2": "True"}
    queued = fake.create(ctx, name="q", owner="p", size=None)
    assert queued["status"] == "queued"
    fake.delete(ctx, image["id"])
    with pytest.raises(exception.ImageNotFound):
        fake.get(ctx, image["id"])
