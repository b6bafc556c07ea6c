"""The Cinder harness's configuration for the extend-completion extension."""

import types

from volumesvc_aio import cinder

PASTE = """[composite:openstack_volume_api_v3]
use = call:cinder.wsgi.middleware.auth:pipeline_factory
noauth = request_id faultwrap sizelimit noauth apiv3
keystone = request_id faultwrap sizelimit authtoken keystonecontext apiv3

[app:apiv3]
paste.app_factory = cinder.api.v3.router:APIRouter.factory
"""


def test_the_filter_goes_just_before_apiv3_in_every_pipeline():
    text = cinder.with_show_extend_filter(PASTE)
    assert "noauth = request_id faultwrap sizelimit noauth volumesvc_show_extend_new_size " \
           "apiv3\n" in text
    assert "keystonecontext volumesvc_show_extend_new_size apiv3\n" in text
    assert "[filter:volumesvc_show_extend_new_size]\n" in text
    assert "extend_completion:show_extend_new_size_factory" in text
    assert "use = call:cinder.wsgi.middleware.auth:pipeline_factory\n" in text


def test_extension_config_and_event_credentials(tmp_path):
    harness = cinder.CinderHarness(str(tmp_path), port=8776, transport_url="rabbit://x/",
                                   deps_dir=str(tmp_path / "deps"),
                                   nova_endpoint="http://127.0.0.1:8774/v2.1",
                                   extend_completion=True)
    text = harness.config_text()
    assert f"volume_manager = {cinder.COMPLETION_MANAGER}" in text
    # Our noauth2 API refuses a request without a token (401): events carry admin's.
    assert "[nova]\nauth_type = admin_token\nendpoint = http://127.0.0.1:8774/v2.1\n" \
           f"token = {cinder.ADMIN_TOKEN}\n" in text
    stock = cinder.CinderHarness(str(tmp_path), port=8776, transport_url="rabbit://x/",
                                 deps_dir=str(tmp_path / "deps"))
    assert "volume_manager" not in stock.config_text()


def test_default_quotas_reach_cinder_conf_only_when_asked(tmp_path):
    """The session's shared test Cinder lifts the 10-volume quota; the default keeps it."""
    unlimited = cinder.CinderHarness(str(tmp_path), port=8776, transport_url="rabbit://x/",
                                     deps_dir=str(tmp_path / "deps"),
                                     default_quotas={"volumes": -1, "gigabytes": -1})
    text = unlimited.config_text()
    assert "quota_gigabytes = -1\n" in text and "quota_volumes = -1\n" in text
    stock = cinder.CinderHarness(str(tmp_path), port=8776, transport_url="rabbit://x/",
                                 deps_dir=str(tmp_path / "deps"))
    assert "quota_" not in stock.config_text()


def test_api_workers_reach_cinder_conf(tmp_path):
    """``volumesvc-aio --volume-api-workers``: one cinder-api process unless asked."""
    stock = cinder.CinderHarness(str(tmp_path), port=8776, transport_url="rabbit://x/",
                                 deps_dir=str(tmp_path / "deps"))
    assert "osapi_volume_workers = 1\n" in stock.config_text()
    more = cinder.CinderHarness(str(tmp_path), port=8776, transport_url="rabbit://x/",
                                deps_dir=str(tmp_path / "deps"), api_workers=3)
    assert "osapi_volume_workers = 3\n" in more.config_text()
    # cinder-api waits Cinder's default 60 s for cinder-volume, with Ceph too.
    assert "rpc_response_timeout = 60\n" in stock.config_text()
    with_ceph = cinder.CinderHarness(str(tmp_path), port=8776, transport_url="rabbit://x/",
                                     deps_dir=str(tmp_path / "deps"),
                                     ceph=types.SimpleNamespace(conf_path="/etc/ceph/x.conf"),
                                     rbd_secret_uuid="5e0b6f1c-0000-4000-8000-000000000001")
    assert "rpc_response_timeout = 60\n" in with_ceph.config_text()
