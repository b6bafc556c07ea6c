"""What the keystone all-in-one writes for each service, read back by the readers that matter.

No process starts here: the harnesses only render files. volumesvc.conf is
loaded with volumesvc's own options (a typo in a group or option name fails),
the others are read with configparser.
"""

import configparser
import json

from keystoneauth1 import loading as ks_loading

from volumesvc.conf import get_conf
from volumesvc_aio import cinder, config, glance, keystone, tempest


def _keystone(tmp_path):
    return keystone.KeystoneHarness(str(tmp_path / "keystone"), port=5999)


def _ini(text):
    parser = configparser.ConfigParser(interpolation=None)
    parser.read_string(text)
    return parser


def test_volumesvc_conf_authenticates_everything_with_keystone(tmp_path):
    ks = _keystone(tmp_path)
    path = config.write_config(str(tmp_path), transport_url="rabbit://", api_port=1,
                               api_workers=1, host="h", cinder_url="http://c/v3",
                               glance_url="http://g", keystone=ks)
    conf = get_conf(["--config-file", path], default_config_files=[])
    assert conf.api.auth_strategy == "keystone"
    assert conf.keystone_authtoken.www_authenticate_uri == "http://127.0.0.1:5999/v3"
    assert conf.keystone_authtoken.service_token_roles_required is True
    for group in ("keystone_authtoken", "cinder", "glance", "service_user"):
        assert conf[group].auth_type == "password", group
        # Loading registers the plugin's own options (username, ...), as at run time.
        ks_loading.load_auth_from_conf_options(conf, group)
        assert conf[group].username == "volumesvc", group
        assert conf[group].auth_url == "http://127.0.0.1:5999/v3", group
        assert conf[group].password == ks.password, group
    assert conf.cinder.auth_strategy == conf.glance.auth_strategy == "keystone"
    assert conf.cinder.endpoint_override == "http://c/v3"
    assert conf.service_user.send_service_user_token is True


def test_volumesvc_conf_without_keystone_is_noauth_as_before(tmp_path):
    path = config.write_config(str(tmp_path), transport_url="rabbit://", api_port=1,
                               api_workers=1, host="h", cinder_url="http://c/v3",
                               glance_url="http://g")
    conf = get_conf(["--config-file", path], default_config_files=[])
    assert conf.api.auth_strategy == "noauth2"
    assert conf.cinder.auth_strategy == conf.glance.auth_strategy == "noauth"
    assert conf.service_user.send_service_user_token is False
    assert conf.cinder.auth_type is None


def test_cinder_validates_tokens_and_calls_back_with_a_service_token(tmp_path):
    ks = _keystone(tmp_path)
    harness = cinder.CinderHarness(str(tmp_path / "cinder"), port=1, transport_url="rabbit://",
                                   nova_endpoint="http://n/v2.1", keystone=ks)
    ini = _ini(harness.config_text())
    assert ini["DEFAULT"]["auth_strategy"] == "keystone"
    assert ini["keystone_authtoken"]["username"] == "cinder"
    assert ini["keystone_authtoken"]["service_token_roles"] == "service"
    # The compute endpoint comes from the catalog, with the cinder user's token.
    assert "endpoint" not in ini["nova"]
    assert (ini["nova"]["auth_type"], ini["nova"]["username"]) == ("password", "cinder")
    assert ini["service_user"]["send_service_user_token"] == "true"
    noauth = _ini(cinder.CinderHarness(str(tmp_path / "c2"), port=1, transport_url="rabbit://",
                                       nova_endpoint="http://n/v2.1").config_text())
    assert noauth["DEFAULT"]["auth_strategy"] == "noauth"
    # Without Keystone the events carry noauth2's admin token (our API answers a
    # tokenless request 401; see tests/lab/aio/test_cinder_extend.py).
    assert noauth["nova"]["auth_type"] == "admin_token"


def test_glance_with_keystone_drops_the_open_policy(tmp_path):
    ks = _keystone(tmp_path)
    ini = _ini(glance.GlanceHarness(str(tmp_path / "g"), port=1, keystone=ks).config_text())
    assert ini["paste_deploy"]["flavor"] == "keystone"
    assert "oslo_policy" not in ini
    assert ini["keystone_authtoken"]["username"] == "glance"
    noauth = _ini(glance.GlanceHarness(str(tmp_path / "g2"), port=1).config_text())
    assert noauth["paste_deploy"]["flavor"] == ""
    assert "policy_file" in noauth["oslo_policy"]


def test_clouds_yaml_names_one_cloud_per_user_and_the_password_is_private(tmp_path):
    ks = _keystone(tmp_path)
    path = ks.write_clouds_yaml(str(tmp_path / "clouds.yaml"))
    clouds = json.load(open(path))["clouds"]
    assert {name: (c["auth"]["username"], c["auth"]["project_name"])
            for name, c in clouds.items()} == {
        "volumesvc-aio": ("admin", "admin"), "volumesvc-aio-demo": ("demo", "demo"),
        "volumesvc-aio-reader": ("demo-reader", "demo")}
    assert clouds["volumesvc-aio"]["auth"]["auth_url"] == "http://127.0.0.1:5999/v3"
    assert (tmp_path / "clouds.yaml").stat().st_mode & 0o077 == 0
    assert (tmp_path / "keystone" / "password").stat().st_mode & 0o077 == 0
    # One password per state dir, kept across harness objects (restarts).
    assert keystone.KeystoneHarness(str(tmp_path / "keystone")).password == ks.password


def test_tempest_conf_and_summary():
    ini = _ini(tempest.tempest_conf(identity_url="http://k/v3", password="pw", image_id="img",
                                    workspace="/w"))
    assert ini["identity"]["uri_v3"] == "http://k/v3"
    assert ini["compute"]["image_ref"] == "img"
    # one image only: tempest's second image is the same (its tests by image skip)
    assert ini["compute"]["image_ref_alt"] == "img"
    assert ini["compute-feature-enabled"]["volume_multiattach"] == "True"
    # tempest's multiattach volumes need a type that says so (else: plain volumes)
    assert ini["volume"]["volume_type_multiattach"] == tempest.MULTIATTACH_TYPE
    # os-stop/os-start need no flag; shelve is served (for volume-backed servers)
    assert ini["compute-feature-enabled"]["shelve"] == "True"
    assert ini["validation"]["run_validation"] == "False"
    assert ini["network"]["catalog_type"] == "identity"
    output = "Totals\n======\n - Passed: 40\n - Skipped: 0\n - Expected Fail: 0\n - Failed: 1\n"
    totals = tempest.parse_totals(output)
    assert totals == {"Passed": 40, "Skipped": 0, "Expected Fail": 0, "Failed": 1}
    assert tempest.summary(totals, ["t"] * 41) == (
        "tempest: listed=41 passed=40 skipped=0 failed=1")


def test_tempest_conf_names_a_second_image_when_given_one():
    """tempest runs its server list tests by image only when its two images differ."""
    ini = _ini(tempest.tempest_conf(identity_url="http://k/v3", password="pw", image_id="img",
                                    alt_image_id="img2", workspace="/w"))
    assert (ini["compute"]["image_ref"], ini["compute"]["image_ref_alt"]) == ("img", "img2")


def test_the_cluster_run_has_two_computes_live_migration_and_its_ca():
    ini = _ini(tempest.tempest_conf(identity_url="http://k/v3", password="pw", image_id="img",
                                    workspace="/w", compute_nodes=3,
                                    features=tempest.CLUSTER_FEATURES, ca_file="/ca.pem"))
    assert ini["compute"]["min_compute_nodes"] == "3"
    features = ini["compute-feature-enabled"]
    assert (features["live_migration"], features["volume_backed_live_migration"]) == (
        "True", "True")
    # Only volume-backed servers move: tempest never asks for a block migration.
    assert features["block_migration_for_live_migration"] == "False"
    assert features["volume_multiattach"] == "True"     # the rest as for the all-in-one
    assert ini["identity"]["ca_certificates_file"] == "/ca.pem"
    one = _ini(tempest.tempest_conf(identity_url="http://k/v3", password="pw", image_id="img",
                                    workspace="/w"))
    assert one["compute"]["min_compute_nodes"] == "1"
    assert one["compute-feature-enabled"]["live_migration"] == "False"
    assert "ca_certificates_file" not in one["identity"]


def test_the_cluster_list_names_only_volume_backed_moves_and_each_test_once():
    with open(tempest.CLUSTER_INCLUDE_LIST) as f:
        rules = [line.strip() for line in f if line.strip() and not line.startswith("#")]
    assert len(rules) == len(set(rules)) == 4
    assert all(rule.startswith("tempest\\.api\\.compute\\.admin\\.") for rule in rules)
    assert not any("block_migration" in rule or "cold_migration" in rule for rule in rules)


def test_every_exclusion_gives_its_reason():
    with open(tempest.EXCLUDE_LIST) as f:
        rules = [line for line in f if line.strip() and not line.startswith("#")]
    assert rules
    for line in rules:
        regex, _, reason = line.partition(" # ")
        assert regex.startswith("tempest\\.") and len(reason.strip()) > 3, line
        assert "fail" not in reason.lower(), line


def test_a_keystone_start_removes_the_open_policy_of_an_earlier_noauth_start(tmp_path):
    """Regression: oslo.policy reads etc/policy.yaml by itself; left over, it opened Glance."""
    deps = tmp_path / "deps"
    paste = deps / f"glance-{glance.GLANCE_VERSION}" / "etc" / "glance"
    paste.mkdir(parents=True)
    (paste / "glance-api-paste.ini").write_text("[pipeline:glance-api]\n")
    state = str(tmp_path / "glance")
    glance.GlanceHarness(state, port=1, deps_dir=str(deps)).configure()
    policy = tmp_path / "glance" / "etc" / "policy.yaml"
    assert policy.exists()
    glance.GlanceHarness(state, port=1, deps_dir=str(deps),
                         keystone=_keystone(tmp_path)).configure()
    assert not policy.exists()


def test_bootstrap_takes_a_password_that_starts_with_a_dash(tmp_path, monkeypatch):
    """Regression: keystone-manage read such a password as an option and the start failed."""
    harness = _keystone(tmp_path)
    (tmp_path / "keystone").mkdir()
    (tmp_path / "keystone" / "password").write_text("-dash-first\n")
    calls = []
    monkeypatch.setattr(keystone.ServiceHarness, "db_sync", lambda self: None)
    monkeypatch.setattr(harness, "_manage", lambda *args: calls.append(args))
    harness.db_sync()
    bootstrap = next(args for args in calls if args[0] == "bootstrap")
    assert "--bootstrap-password=-dash-first" in bootstrap
