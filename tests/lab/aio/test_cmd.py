"""volumesvc-aio's command line: one clear line when a dependency is missing, its options."""

import sys

import pytest

from volumesvc_aio import cmd as aio


@pytest.mark.parametrize("hidden", ["pymysql", "libvirt"])
def test_a_missing_extra_module_is_one_clear_line(hidden, monkeypatch, capsys, tmp_path):
    # None in sys.modules makes ``import <hidden>`` fail as if not installed.
    monkeypatch.setitem(sys.modules, hidden, None)
    monkeypatch.setattr(aio.AllInOne, "start", lambda self: pytest.fail("must not start"))
    assert aio.main(["--state-dir", str(tmp_path / "aio"), "--no-install"]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert hidden in err and "pip install ./aio" in err
    assert not (tmp_path / "aio").exists()


def test_nothing_is_missing_once_installed():
    assert aio.missing_modules() == []


def test_computes_get_their_own_names_drivers_and_capabilities():
    args = aio._parse_args(["--computes", "3", "--compute-driver",
                            "aio-compute-2=libvirt,-supports_multiattach",
                            "--compute-driver", "aio-compute-3=fake"])
    assert args.hosts == ["aio-compute", "aio-compute-2", "aio-compute-3"]
    assert args.drivers == {"aio-compute-2": ("libvirt", ["supports_multiattach"]),
                            "aio-compute-3": ("fake", [])}
    assert aio._parse_args([]).hosts == ["aio-compute"]


@pytest.mark.parametrize("argv", [
    ["--computes", "0"],
    ["--compute-driver", "aio-compute-2=libvirt"],           # no such compute
    ["--compute-driver", "aio-compute"],                     # no driver
    ["--compute-driver", "aio-compute=libvirt,supports_multiattach"],  # no '-'
])
def test_bad_compute_options_are_usage_errors(argv, capsys):
    with pytest.raises(SystemExit) as exc:
        aio._parse_args(argv)
    assert exc.value.code == 2
    assert "volumesvc-aio: error:" in capsys.readouterr().err


def test_a_compute_config_overrides_host_driver_root_and_capabilities(tmp_path):
    from volumesvc import conf as vs_conf
    from volumesvc_aio import config as aio_config

    state = str(tmp_path)
    main = aio_config.write_config(state, transport_url="rabbit://g:g@127.0.0.1:5672/v",
                                   api_port=8774, api_workers=1, host="aio-compute",
                                   cinder_url="http://c", glance_url="http://g",
                                   conductor_metrics_port=9800)
    first = aio_config.write_compute_config(state, host="aio-compute", first=True,
                                            metrics_port=9801)
    second = aio_config.write_compute_config(
        state, host="aio-compute-2", first=False, driver="fake",
        disabled_capabilities=["supports_multiattach"], metrics_port=9802)
    confs = [vs_conf.get_conf(args=["--config-file", main, "--config-file", extra],
                              default_config_files=[]) for extra in (first, second)]
    assert [c.host for c in confs] == ["aio-compute", "aio-compute-2"]
    assert [c.compute_driver for c in confs] == ["libvirt", "fake"]
    assert [c.libvirt.connection_uri for c in confs] == [
        f"qemu:///embed?root={state}/libvirt", f"qemu:///embed?root={state}/libvirt-aio-compute-2"]
    assert [c.virt.disabled_capabilities for c in confs] == [[], ["supports_multiattach"]]
    assert confs[1].database.connection == confs[0].database.connection
    # Metrics on, each process on a port of its own.
    assert [c.metrics.enabled for c in confs] == [True, True]
    assert confs[0].metrics.conductor_listen_port == 9800
    assert [c.metrics.compute_listen_port for c in confs] == [9801, 9802]
    assert aio_config.operator_urls(state, 8774, {"volumesvc-conductor": 9800}).endswith(
        " volumesvc-conductor-metrics=http://127.0.0.1:9800/metrics")


def test_failed_attachment_ttl_reaches_the_api_options(tmp_path):
    """--failed-attachment-ttl (API 2.106 tests) lands in [api]; without it the default."""
    from volumesvc import conf as vs_conf
    from volumesvc_aio import config as aio_config

    common = dict(transport_url="rabbit://g:g@127.0.0.1:5672/v", api_port=8774,
                  api_workers=1, host="h", cinder_url="http://c", glance_url="http://g")
    ttls = []
    for name, ttl in (("set", 20), ("unset", None)):
        state = tmp_path / name
        state.mkdir()
        path = aio_config.write_config(str(state), failed_attachment_ttl=ttl, **common)
        conf = vs_conf.get_conf(args=["--config-file", path], default_config_files=[])
        ttls.append(conf.api.failed_attachment_ttl)
    assert ttls == [20, 3600]


def test_each_all_in_one_names_its_domains_after_its_api_port(tmp_path):
    """Regression: two all-in-ones on one libvirt daemon both defined instance-00000001."""
    from volumesvc import conf as vs_conf
    from volumesvc_aio import config as aio_config

    templates = []
    for port in (8774, 18774):
        state = tmp_path / str(port)
        state.mkdir()
        path = aio_config.write_config(str(state), transport_url="rabbit://g:g@127.0.0.1/v",
                                       api_port=port, api_workers=1, host="h",
                                       cinder_url="http://c", glance_url="http://g")
        conf = vs_conf.get_conf(args=["--config-file", path], default_config_files=[])
        templates.append(conf.instance_name_template)
    assert [t % 1 for t in templates] == ["aio8774-instance-00000001",
                                          "aio18774-instance-00000001"]


def test_health_check_and_metrics_of_the_all_in_one(tmp_path):
    """The API drains with a file of the state dir and serves metrics; both URLs printed."""
    from volumesvc import conf as vs_conf
    from volumesvc_aio import config as aio_config

    path = aio_config.write_config(str(tmp_path), transport_url="rabbit://g:g@127.0.0.1:5672/v",
                                   api_port=8774, api_workers=1, host="h",
                                   cinder_url="http://c", glance_url="http://g")
    conf = vs_conf.get_conf(args=["--config-file", path], default_config_files=[])
    drain = str(tmp_path / "healthcheck_disable")
    assert conf.healthcheck.disable_by_file_path == drain
    assert "disable_by_file" in conf.healthcheck.backends
    assert conf.metrics.enabled
    line = aio_config.operator_urls(str(tmp_path), 8774)
    assert "health=http://127.0.0.1:8774/healthcheck" in line and drain in line
    assert f"metrics=http://127.0.0.1:8774{conf.metrics.path}" in line
