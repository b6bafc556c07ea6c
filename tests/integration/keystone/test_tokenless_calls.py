"""Calls to Cinder made without the user's token, against the keystone all-in-one.

A request another conductor replays after the one that accepted it died
(durable volume requests keep no token), and the periodic tasks, call
Cinder with the adapter's own credentials: the ``volumesvc`` service user
in project ``service``. Cinder refuses a URL that names a project other
than the token's with 400 "Malformed request url", so such calls must not
put the context's project in the URL even though ``[cinder]
endpoint_override`` routes by project (regression: attaches accepted
during a conductor SIGKILL on the cluster ended in error with that
message).
"""

import os
import uuid

from tests.integration.keystone.conftest import cinder_for, http, wait_volume_status
from volumesvc.conf import get_conf
from volumesvc.context import RequestContext
from volumesvc.volume import cinder as cinder_adapter


def _scope(kaio, admin, subject):
    """(user id, project id) of the token ``subject`` (Keystone's token validation)."""
    status, _, body = http("GET", kaio.identity_url + "/auth/tokens", admin,
                           headers={"X-Subject-Token": subject})
    assert status == 200, body
    return body["token"]["user"]["id"], body["token"]["project"]["id"]


def test_a_call_without_the_users_token_reaches_the_users_volume(kaio, token):
    member = token("demo", "demo")
    user_id, project_id = _scope(kaio, token("admin", "admin"), member)
    cinder = cinder_for(kaio, member)
    volume = cinder.volumes.create(1, name=f"ks-tokenless-{uuid.uuid4().hex[:6]}")
    try:
        wait_volume_status(cinder, volume.id, "available")
        conf = get_conf(args=["--config-file", os.path.join(kaio.state_dir, "volumesvc.conf")],
                        default_config_files=[])
        assert conf.cinder.endpoint_override, "the case needs a URL routed by project"
        api = cinder_adapter.CinderAPI(conf)
        # What a replayed request's context holds: the user and project, no token.
        replayed = RequestContext(user_id=user_id, project_id=project_id, roles=["member"])
        assert api.get(replayed, volume.id)["id"] == volume.id
        listed = api.attachment_get_all(replayed.elevated(), volume_id=volume.id,
                                        all_tenants=True)
        assert listed == []
    finally:
        cinder.volumes.delete(volume.id)
