"""The Ceph and libvirtd harnesses' pure parts: ceph.conf, qemu.conf, socket probe."""

import configparser
import socket

from volumesvc_aio import ceph, libvirtd


def test_ceph_conf_is_self_contained_under_the_state_dir(tmp_path):
    harness = ceph.CephHarness(str(tmp_path / "c"))
    harness.fsid, harness.mon_v2_port, harness.mon_v1_port = "F", 13300, 16789
    parser = configparser.ConfigParser(interpolation=None)
    parser.read_string(harness.config_text(16800, 16839))
    state = harness.state_dir
    assert parser["global"]["mon host"] == "[v2:127.0.0.1:13300,v1:127.0.0.1:16789]"
    assert parser["global"]["ms bind port min"] == "16800"
    # Every path Ceph writes is under the state dir, never /etc/ceph or /var/lib/ceph.
    paths = [v for section in parser.sections() for v in parser[section].values()
             if v.startswith("/")]
    assert paths and all(p.startswith(state + "/") for p in paths), paths
    # The keyring option only for clients: daemons keep <data>/keyring.
    assert "keyring" not in parser["global"]
    assert parser["client"]["keyring"] == f"{state}/$cluster.$name.keyring"
    # No block path: BlueStore makes <osd data>/block itself.
    assert "bluestore block path" not in parser["osd"]
    assert parser["mon"]["mgr initial modules"] == "iostat"
    assert harness.keyring("cinder") == f"{state}/ceph.client.cinder.keyring"


def test_ceph_tools_never_see_another_clusters_environment(monkeypatch):
    monkeypatch.setenv("CEPH_CONF", "/etc/ceph/ceph.conf")
    monkeypatch.setenv("CEPH_ARGS", "--id admin")
    env = ceph.clean_env()
    assert "CEPH_CONF" not in env and "CEPH_ARGS" not in env


def test_free_port_range_is_free():
    first, last = ceph.free_port_range(10)
    assert last - first == 9
    for port in range(first, last + 1):
        with socket.socket() as s:
            s.bind(("127.0.0.1", port))


def test_qemu_conf_written_when_missing(tmp_path):
    path = tmp_path / "libvirt" / "qemu.conf"
    assert libvirtd.ensure_qemu_conf(str(path))
    lines = path.read_text().splitlines()
    assert 'user = "root"' in lines and 'group = "root"' in lines
    # A second call sees the user and leaves the file alone.
    assert not libvirtd.ensure_qemu_conf(str(path))
    assert path.read_text().splitlines() == lines


def test_qemu_conf_operator_choice_kept_comments_ignored(tmp_path):
    chosen = tmp_path / "chosen.conf"
    chosen.write_text('user = "qemu"\n')
    assert not libvirtd.ensure_qemu_conf(str(chosen))
    assert chosen.read_text() == 'user = "qemu"\n'
    commented = tmp_path / "commented.conf"
    commented.write_text('#user = "qemu"\nvnc_listen = "127.0.0.1"')
    assert libvirtd.ensure_qemu_conf(str(commented))
    text = commented.read_text()
    assert text.startswith('#user = "qemu"\nvnc_listen = "127.0.0.1"\n')
    assert 'user = "root"' in text.splitlines()


def test_socket_answers_only_when_listening(tmp_path):
    path = str(tmp_path / "s")
    assert not libvirtd.socket_answers(path)
    with socket.socket(socket.AF_UNIX) as server:
        server.bind(path)
        server.listen()
        assert libvirtd.socket_answers(path)


def test_ceph_on_another_address_names_it_everywhere(tmp_path):
    """The cluster's Ceph: every host's namespace reaches the monitor on the bridge."""
    harness = ceph.CephHarness(str(tmp_path / "c"), address="10.251.7.1")
    harness.fsid, harness.mon_v2_port, harness.mon_v1_port = "F", 13300, 16789
    parser = configparser.ConfigParser(interpolation=None)
    parser.read_string(harness.config_text(16800, 16839))
    assert parser["global"]["mon host"] == "[v2:10.251.7.1:13300,v1:10.251.7.1:16789]"
    assert parser["global"]["public addr"] == parser["global"]["cluster addr"] == "10.251.7.1"
    assert harness.mon_hosts == (["10.251.7.1"], ["16789"])


def _host_daemon(tmp_path, host="h1", address="10.251.7.11"):
    layout = libvirtd.HostLayout(namespace=f"vsx-{host}", address=address,
                                 host_uuid=libvirtd.HostLayout.uuid_for(str(tmp_path), host))
    return libvirtd.LibvirtDaemon(str(tmp_path / "libvirtd" / host), host=layout)


def _libvirt_conf(path):
    """libvirt's ``key = value`` files as a dict (values unquoted)."""
    pairs = (line.split("=", 1) for line in path.read_text().splitlines()
             if "=" in line and not line.startswith("#"))
    return {k.strip(): v.strip().strip('"') for k, v in pairs}


def test_a_hosts_daemon_has_its_own_uuid_listener_and_directories(tmp_path):
    one, two = _host_daemon(tmp_path), _host_daemon(tmp_path, "h2", "10.251.7.12")
    for daemon in (one, two):
        daemon.configure()
    conf = _libvirt_conf(tmp_path / "libvirtd" / "h1" / "etc" / "libvirtd.conf")
    assert conf["host_uuid"] == one.host.host_uuid != two.host.host_uuid
    # The same UUID on the next start of the same deployment.
    assert one.host.host_uuid == libvirtd.HostLayout.uuid_for(str(tmp_path), "h1")
    assert (conf["listen_tcp"], conf["listen_addr"], conf["auth_tcp"]) == (
        "1", "10.251.7.11", "none")
    qemu = _libvirt_conf(tmp_path / "libvirtd" / "h1" / "etc" / "qemu.conf")
    assert qemu["migration_address"] == qemu["migration_host"] == "10.251.7.11"
    assert (qemu["user"], qemu["group"]) == ("root", "root")
    assert one.uri == ("qemu+unix:///system?socket="
                       f"{tmp_path}/libvirtd/h1/run/libvirt-sock") != two.uri
    assert one.host.tcp_uri == "qemu+tcp://10.251.7.11/system"


def test_a_hosts_daemon_runs_in_its_namespace_over_its_own_directories(tmp_path):
    daemon = _host_daemon(tmp_path)
    argv = daemon._host_argv()
    assert argv[:4] == ["ip", "netns", "exec", "vsx-h1"]
    script = argv[-1]
    own = f"{tmp_path}/libvirtd/h1"
    for name, target in libvirtd.HOST_MOUNTS:
        assert f"mount --bind {own}/{name} {target}" in script
    # Each daemon's pid file in its own run directory, not the shared /run.
    assert "virtlogd -p /run/libvirt/virtlogd.pid" in script
    assert script.endswith(f"exec libvirtd --listen -p /run/libvirt/libvirtd.pid "
                           f"--config {own}/etc/libvirtd.conf")
    # The machine's shared daemon keeps its system URI.
    assert libvirtd.LibvirtDaemon(str(tmp_path / "shared")).uri == "qemu:///system"
