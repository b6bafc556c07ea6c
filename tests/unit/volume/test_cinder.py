"""CinderAPI's own logic: endpoints, identity headers, error translation, shapes.

Only the HTTP boundary is replaced: ``client()`` returns a stub standing for
cinderclient, so what is tested is what the adapter does with its answers.
"""

import socket
import threading
from unittest import mock

import pytest
from cinderclient import exceptions as cinder_exception
from keystoneauth1 import exceptions as ks_exception

from tests.fixtures.clock import ModuleClock
from volumesvc import exception
from volumesvc.conf import get_conf
from volumesvc.context import RequestContext
from volumesvc.volume import cinder

PROJECT = "6f0c3b1e2a4d4c5b9e8f7a6b5c4d3e2f"
VOL = "11111111-1111-1111-1111-111111111111"
ATT = "22222222-2222-2222-2222-222222222222"


@pytest.fixture
def conf():
    conf = get_conf()
    conf.set_override("auth_strategy", "noauth", "cinder")
    conf.set_override("endpoint_override", "http://127.0.0.1:8776/v3", "cinder")
    return conf


@pytest.fixture
def ctx():
    return RequestContext(user_id="alice", project_id=PROJECT)


@pytest.fixture
def api(conf):
    return cinder.CinderAPI(conf)


@pytest.fixture
def stub(api):
    client = mock.MagicMock()
    with mock.patch.object(api, "client", return_value=client) as factory:
        client.factory = factory
        yield client


def _http_error(cls, code, message="boom"):
    return cls(code, message=message)


class TestEndpoint:
    def test_routable_project_goes_into_the_url(self, api, ctx):
        assert api._endpoint(ctx, "3.44") == (f"http://127.0.0.1:8776/v3/{PROJECT}", "3.44")

    def test_unroutable_project_uses_projectless_url_and_raises_microversion(self, api):
        ctx = RequestContext(user_id="admin", project_id="admin")
        assert api._endpoint(ctx, "3.44") == ("http://127.0.0.1:8776/v3", "3.67")
        assert api._endpoint(ctx, "3.71") == ("http://127.0.0.1:8776/v3", "3.71")

    def test_placeholder_is_filled(self, api, conf, ctx):
        conf.set_override("endpoint_override", "http://c:8776/v3/%(project_id)s", "cinder")
        assert api._endpoint(ctx, "3.0") == (f"http://c:8776/v3/{PROJECT}", "3.0")

    def test_a_call_with_the_adapters_own_credentials_names_no_project(self, conf):
        """Regression: a replayed request (no token) put the user's project in the URL.

        With keystone the call then carried the service user's token, and
        Cinder answered 400 "Malformed request url" (cluster, conductor
        killed mid-storm: accepted attaches ended in error).
        """
        conf.set_override("auth_strategy", "keystone", "cinder")
        api = cinder.CinderAPI(conf)
        replayed = RequestContext(user_id="alice", project_id=PROJECT)
        assert api._endpoint(replayed, "3.44") == ("http://127.0.0.1:8776/v3", "3.67")
        conf.set_override("endpoint_override", "http://c:8776/v3/%(project_id)s", "cinder")
        assert api._endpoint(replayed, "3.71") == ("http://c:8776/v3", "3.71")
        with_token = RequestContext(user_id="alice", project_id=PROJECT, auth_token="t")
        assert api._endpoint(with_token, "3.44") == (f"http://c:8776/v3/{PROJECT}", "3.44")

    def test_no_override_means_catalog(self, api, conf, ctx):
        conf.clear_override("endpoint_override", "cinder")
        assert api._endpoint(ctx, "3.44") == (None, "3.44")


class TestIdentity:
    def test_noauth_token_is_user_colon_project(self, api, ctx):
        auth = api._auth(ctx, "http://x/v3")
        assert auth.get_token(None) == f"alice:{PROJECT}"

    def test_noauth_requires_endpoint_override(self, api, conf, ctx):
        conf.clear_override("endpoint_override", "cinder")
        with pytest.raises(exception.ConfigInvalid):
            api.client(ctx)

    def test_service_calls_carry_service_role_in_noauth(self, api, ctx):
        with mock.patch.object(cinder.cinder_client, "Client") as client:
            api.client(ctx, "3.44", service=True)
            assert client.call_args.kwargs["additional_headers"] == {
                "X-Service-Roles": "service"}
            assert client.call_args.args == ("3.44",)
            api.client(ctx, "3.44")
            assert client.call_args.kwargs["additional_headers"] == {}

    def test_keystone_uses_the_context_token(self, api, conf):
        conf.set_override("auth_strategy", "keystone", "cinder")
        ctx = RequestContext(user_id="u", project_id=PROJECT, auth_token="tok")
        assert api._auth(ctx, "http://x/v3").get_token(None) == "tok"


class TestTranslation:
    def test_volume_404(self, api, stub, ctx):
        stub.volumes.get.side_effect = _http_error(cinder_exception.NotFound, 404)
        with pytest.raises(exception.VolumeNotFound) as err:
            api.get(ctx, VOL)
        assert VOL in str(err.value)

    def test_attachment_404(self, api, stub, ctx):
        stub.attachments.show.side_effect = _http_error(cinder_exception.NotFound, 404)
        with pytest.raises(exception.VolumeAttachmentNotFound):
            api.attachment_get(ctx, ATT)

    def test_snapshot_404(self, api, stub, ctx):
        stub.volume_snapshots.get.side_effect = _http_error(cinder_exception.NotFound, 404)
        with pytest.raises(exception.SnapshotNotFound):
            api.get_snapshot(ctx, "s1")

    def test_400_keeps_cinders_message(self, api, stub, ctx):
        stub.volumes.extend.side_effect = _http_error(
            cinder_exception.BadRequest, 400, "New size for extend must be greater")
        with pytest.raises(exception.Invalid, match="New size for extend must be greater"):
            api.extend(ctx, VOL, 1)
        assert stub.factory.call_args.args[1] == cinder.MV_EXTEND_IN_USE

    def test_409_is_conflict_and_500_keeps_code(self, api, stub, ctx):
        stub.volumes.delete.side_effect = _http_error(cinder_exception.ClientException, 409)
        with pytest.raises(exception.Conflict):
            api.delete(ctx, VOL)
        stub.volumes.delete.side_effect = _http_error(cinder_exception.ClientException, 500)
        with pytest.raises(exception.CinderAPIError) as err:
            api.delete(ctx, VOL)
        assert err.value.code == 500

    @pytest.mark.parametrize("error", [ks_exception.ConnectFailure("refused"),
                                       ks_exception.EndpointNotFound("none")])
    def test_connection_errors(self, api, stub, ctx, error):
        stub.attachments.list.side_effect = error
        with pytest.raises(exception.CinderConnectionFailed):
            api.attachment_get_all(ctx, instance_id="i")

    def test_volume_type_by_name_or_id(self, api, stub, ctx):
        t = mock.Mock()
        t.to_dict.return_value = {"id": "t-id", "name": "multi", "extra_specs": {}}
        stub.volume_types.list.return_value = [t]
        assert api.get_volume_type(ctx, "multi")["id"] == "t-id"
        assert api.get_volume_type(ctx, "t-id")["name"] == "multi"
        with pytest.raises(exception.VolumeTypeNotFound):
            api.get_volume_type(ctx, "nope")


class TestAttachments:
    def test_create_reserves_at_344_without_connector(self, api, stub, ctx):
        stub.attachments.create.return_value = {"id": ATT, "connection_info": None}
        assert api.attachment_create(ctx, VOL, "inst")["id"] == ATT
        stub.attachments.create.assert_called_once_with(VOL, None, "inst", mode="null")
        assert stub.factory.call_args.args[1:] == (cinder.MV_ATTACHMENTS,)
        assert stub.factory.call_args.kwargs == {"service": True, "connect_retries": 0}

    def test_create_with_mode_uses_354(self, api, stub, ctx):
        stub.attachments.create.return_value = {"id": ATT}
        api.attachment_create(ctx, VOL, "inst", mode="ro")
        assert stub.factory.call_args.args[1] == cinder.MV_ATTACHMENT_MODE

    def test_update_returns_brick_shaped_connection_info(self, api, stub, ctx):
        result = mock.Mock()
        result.to_dict.return_value = {
            "id": ATT, "volume_id": VOL, "attach_mode": "rw",
            "connection_info": {"driver_volume_type": "local", "device_path": "/f",
                                "attachment_id": ATT, "access_mode": "rw"}}
        stub.attachments.update.return_value = result
        info = api.attachment_update(ctx, ATT, {"host": "h"}, mountpoint="/dev/sdb")
        stub.attachments.update.assert_called_once_with(
            ATT, {"host": "h", "mountpoint": "/dev/sdb"})
        assert info == {"driver_volume_type": "local",
                        "data": {"device_path": "/f", "access_mode": "rw"},
                        "attachment_id": ATT, "serial": VOL, "attach_mode": "rw"}

    def test_get_all_asks_for_every_project_only_when_told(self, api, stub, ctx):
        stub.attachments.list.return_value = []
        api.attachment_get_all(ctx, instance_id="i", all_tenants=True)
        assert stub.attachments.list.call_args.kwargs == {
            "search_opts": {"all_tenants": 1, "instance_id": "i"}}
        api.attachment_get_all(ctx, volume_id=VOL)
        assert stub.attachments.list.call_args.kwargs == {"search_opts": {"volume_id": VOL}}

    def test_delete_retries_500_and_504(self, api, stub, ctx):
        stub.attachments.delete.side_effect = [
            _http_error(cinder_exception.ClientException, 500),
            _http_error(cinder_exception.ClientException, 504), None]
        with mock.patch.object(cinder, "time", ModuleClock(sleep=mock.Mock())):
            api.attachment_delete(ctx, ATT)
        assert stub.attachments.delete.call_count == 3

    def test_delete_gives_up_after_five(self, api, stub, ctx):
        stub.attachments.delete.side_effect = _http_error(cinder_exception.ClientException, 500)
        with mock.patch.object(cinder, "time", ModuleClock(sleep=mock.Mock())), \
                pytest.raises(exception.CinderAPIError):
            api.attachment_delete(ctx, ATT)
        assert stub.attachments.delete.call_count == 5

    def test_delete_404_only_warns(self, api, stub, ctx):
        stub.attachments.delete.side_effect = _http_error(cinder_exception.NotFound, 404)
        api.attachment_delete(ctx, ATT)
        assert stub.attachments.delete.call_count == 1

    def test_delete_409_is_not_retried(self, api, stub, ctx):
        stub.attachments.delete.side_effect = _http_error(cinder_exception.ClientException, 409)
        with pytest.raises(exception.Conflict):
            api.attachment_delete(ctx, ATT)
        assert stub.attachments.delete.call_count == 1


def test_extend_completion_sends_a_json_boolean(api, stub, ctx):
    api.extend_volume_completion(ctx, VOL, error=0)
    stub.volumes.extend_volume_completion.assert_called_once_with(VOL, False)
    assert stub.factory.call_args.args[1] == cinder.MV_EXTEND_COMPLETION


def test_cross_az_attach(api, conf):
    api.check_availability_zone({"availability_zone": "a"}, "b")
    conf.set_override("cross_az_attach", False, "cinder")
    with pytest.raises(exception.Invalid):
        api.check_availability_zone({"availability_zone": "a"}, "b")
    api.check_availability_zone({"availability_zone": "b"}, "b")


class TestAttachmentCreateResend:
    """Over real sockets: a create is sent again only when it cannot have reached Cinder."""

    def test_a_refused_connection_is_tried_again(self, api, conf, ctx, caplog):
        conf.set_override("http_retries", 2, "cinder")
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]  # closed once the block ends: refused
        conf.set_override("endpoint_override", f"http://127.0.0.1:{port}/v3", "cinder")
        with pytest.raises(exception.CinderConnectionFailed):
            api.attachment_create(ctx, VOL, "inst")
        retries = [r.getMessage() for r in caplog.records
                   if r.getMessage().startswith("Cinder refused the connection")]
        assert len(retries) == 2, retries

    def test_a_connection_broken_after_the_request_was_sent_is_not(self, api, conf, ctx,
                                                                    caplog):
        """As a cinder-api killed while it answered: Cinder may have made the attachment,
        and a second create would make a second one."""
        requests = []
        server = socket.create_server(("127.0.0.1", 0))

        def serve():
            while True:
                try:
                    conn, _ = server.accept()
                except OSError:
                    return
                with conn:
                    requests.append(conn.recv(65536))
        thread = threading.Thread(target=serve, daemon=True)
        thread.start()
        conf.set_override("endpoint_override",
                          f"http://127.0.0.1:{server.getsockname()[1]}/v3", "cinder")
        try:
            with pytest.raises(exception.CinderConnectionFailed):
                api.attachment_create(ctx, VOL, "inst")
        finally:
            server.close()
            thread.join(5)
        assert len(requests) == 1 and requests[0].startswith(b"POST ")
        assert not any(r.getMessage().startswith("Cinder refused the connection")
                       for r in caplog.records)
