"""The cluster deployment's generated configuration (volumesvc_aio.cluster_*).

What a compute in a namespace, an API node behind HAProxy and a client of
the RabbitMQ cluster read must point at the bridge and namespace
addresses, never at loopback; these check the files, the load balancer's
configuration and the transport URL without starting anything.
"""

import configparser
import json
import os
import subprocess

import pytest

from volumesvc_aio import cluster, cluster_config, cluster_db, haproxy, netns, rabbit


def _ini(path):
    parser = configparser.ConfigParser(interpolation=None)
    parser.read(path)
    return parser


def test_network_addresses_come_from_the_subnet():
    net = netns.Network("vsx", "10.251.7.0/24")
    assert net.bridge_address == "10.251.7.1"
    assert [net.address_of(n) for n in (1, 2, 3)] == ["10.251.7.11", "10.251.7.12",
                                                      "10.251.7.13"]
    assert net.namespace("vsx-compute-1") == "vsx-vsx-compute-1"
    assert net.exec_argv("h", ["volumesvc-compute"])[:4] == ["ip", "netns", "exec", "vsx-h"]


def test_transport_url_lists_every_node():
    nodes = [rabbit.ClusterNode("/tmp/x", f"n{i}", "10.251.7.1", 5700 + i) for i in (1, 2, 3)]
    url = rabbit.cluster_transport_url(nodes, "volumesvc", "pw")
    assert url == ("rabbit://volumesvc:pw@10.251.7.1:5701,volumesvc:pw@10.251.7.1:5702,"
                   "volumesvc:pw@10.251.7.1:5703/volumesvc")
    env = nodes[1].env()
    assert env["RABBITMQ_NODENAME"] == "n2@localhost"
    assert env["RABBITMQ_NODE_PORT"] == "5702"
    assert env["RABBITMQ_CONFIG_FILE"] == "/tmp/x/n2/rabbitmq.conf"


def test_shared_config_has_quorum_queues_and_no_loopback(tmp_path):
    path = cluster_config.write_cluster_config(
        str(tmp_path / "volumesvc.conf"), state_dir=str(tmp_path),
        transport_url="rabbit://u:p@10.251.7.1:5701,u:p@10.251.7.1:5702/v",
        database_url="postgresql+psycopg2://postgres@10.251.7.1:5442/volumesvc",
        cinder_url="http://10.251.7.1:18776/v3", glance_url="http://10.251.7.1:19292",
        subnet="10.251.7.0/24")
    conf = _ini(path)
    assert conf["oslo_messaging_rabbit"]["rabbit_quorum_queue"] == "true"
    assert conf["healthcheck"]["allowed_source_ranges"] == "10.251.7.0/24"
    assert "127.0.0.1" not in (tmp_path / "volumesvc.conf").read_text()


def test_the_key_manager_is_on_the_bridge_for_cinder_and_the_computes(tmp_path):
    keys = cluster_config.ClusterBarbican(str(tmp_path / "barbican"), address="10.251.7.1",
                                          port=19311)
    assert keys.url == "http://10.251.7.1:19311"
    ((_, argv),) = keys._commands()
    assert "10.251.7.1:19311" in argv and not any("127.0.0.1" in a for a in argv)
    path = cluster_config.write_cluster_config(
        str(tmp_path / "volumesvc.conf"), state_dir=str(tmp_path), transport_url="rabbit://",
        database_url="sqlite://", cinder_url="http://10.251.7.1:18776/v3",
        glance_url="http://10.251.7.1:19292", subnet="10.251.7.0/24", key_manager_url=keys.url)
    conf = _ini(path)
    assert conf["key_manager"]["backend"] == "barbican"
    assert conf["barbican"]["barbican_endpoint"] == keys.url
    cinder = cluster_config.ClusterCinder(str(tmp_path / "cinder"), address="10.251.7.1",
                                          port=18776, transport_url="rabbit://",
                                          database_connection="sqlite://",
                                          key_manager_url=keys.url)
    (tmp_path / "cinder.conf").write_text(cinder.config_text())
    assert _ini(str(tmp_path / "cinder.conf"))["barbican"]["barbican_endpoint"] == keys.url


def test_node_configs_name_their_host_and_address(tmp_path):
    compute = _ini(cluster_config.write_compute_config(str(tmp_path), host="c1",
                                                       my_ip="10.251.7.11"))
    assert compute["DEFAULT"]["host"] == "c1"
    assert compute["DEFAULT"]["my_ip"] == "10.251.7.11"
    assert compute["libvirt"]["connection_uri"] == f"qemu:///embed?root={tmp_path}/libvirt-c1"
    api = _ini(cluster_config.write_api_config(str(tmp_path), name="api-2",
                                               address="10.251.7.1", port=18782))
    assert (api["DEFAULT"]["host"], api["api"]["listen_host"], api["api"]["listen_port"]) == (
        "api-2", "10.251.7.1", "18782")
    conductor = _ini(cluster_config.write_conductor_config(str(tmp_path), name="conductor-2"))
    assert conductor["DEFAULT"]["host"] == "conductor-2"


def test_haproxy_checks_healthcheck_and_answers_json_faults(tmp_path):
    path = haproxy.write_config(str(tmp_path / "haproxy.cfg"), bind="10.251.7.1:18774",
                                backends=[("api-1", "10.251.7.1:18781"),
                                          ("api-2", "10.251.7.1:18782")])
    text = (tmp_path / "haproxy.cfg").read_text()
    assert "option httpchk GET /healthcheck" in text
    assert "server api-1 10.251.7.1:18781 check" in text
    assert "server api-2 10.251.7.1:18782 check" in text
    error = (tmp_path / "haproxy-errors" / "502.http").read_bytes().decode()
    head, _, body = error.partition("\r\n\r\n")
    assert head.startswith("HTTP/1.0 502 ")
    assert "Content-Type: application/json" in head
    assert json.loads(body)["computeFault"]["code"] == 502
    assert path.endswith("haproxy.cfg")


def test_cluster_cinder_uses_quorum_queues_on_the_bridge(tmp_path):
    """Regression: the cluster's Cinder had classic queues on one RabbitMQ node.

    Stopping that node lost Cinder's casts (volumes stuck ``creating``, boots
    from volume neither ACTIVE nor ERROR); its queues must be replicated.
    """
    cinder = cluster_config.ClusterCinder(
        str(tmp_path), address="10.251.7.1", port=18776,
        transport_url="rabbit://u:p@10.251.7.1:5701,u:p@10.251.7.1:5702/cinder",
        database_connection="sqlite://")
    path = tmp_path / "cinder.conf"
    path.write_text(cinder.config_text())
    conf = _ini(str(path))
    assert conf["oslo_messaging_rabbit"]["rabbit_quorum_queue"] == "true"
    assert conf["DEFAULT"]["my_ip"] == "10.251.7.1"
    assert conf["DEFAULT"]["osapi_volume_listen"] == "10.251.7.1"


def test_mariadb_server_is_the_clusters_own(tmp_path):
    """volumesvc's MariaDB: its own datadir, socket and port on the bridge, no /etc/mysql."""
    server = cluster_db.server_for("mariadb", str(tmp_path), "10.251.7.1", 3416,
                                   "10.251.7.0/24")
    assert server.name == "mariadb"
    assert server.url("volumesvc") == (
        "mysql+pymysql://volumesvc@10.251.7.1:3416/volumesvc?charset=utf8mb4")
    argv = server.argv()
    assert argv[:3] == ["setpriv", "--reuid=mysql", "--regid=mysql"]
    daemon = argv[argv.index("/usr/sbin/mariadbd"):]
    assert daemon[1] == "--no-defaults"
    assert f"--datadir={tmp_path}/mariadb" in daemon
    assert "--bind-address=10.251.7.1" in daemon
    assert "--port=3416" in daemon
    assert f"--socket={tmp_path}/mariadb/mariadbd.sock" in daemon
    assert server._host_pattern() == "10.251.7.0/255.255.255.0"


def test_database_choice_picks_the_server():
    assert isinstance(cluster_db.server_for("postgresql", "/tmp/x", "10.0.0.1", 5442,
                                            "10.0.0.0/24"), cluster_db.PostgresServer)
    with pytest.raises(ValueError, match="postgresql or mariadb"):
        cluster_db.server_for("sqlite", "/tmp/x", "10.0.0.1", 1, "10.0.0.0/24")


def test_port_offset_moves_every_port_and_the_database(tmp_path):
    """Two deployments side by side must not share a port (RabbitMQ's distribution
    ports listen on every interface, whatever the bridge address)."""
    base = cluster.Cluster(str(tmp_path / "a"), prefix="vsa", subnet="10.251.8.0/24")
    moved = cluster.Cluster(str(tmp_path / "b"), prefix="vsb", subnet="10.251.9.0/24",
                            database="mariadb", port_offset=100)

    def ports(c):
        return {c.lb_port, *c.api_ports, c.db_server.port, c.services_db.port,
                *(n.port for n in c.rabbit_nodes), *(n.port + 20000 for n in c.rabbit_nodes)}
    assert base.lb_url == "https://10.251.8.1:18774"
    assert moved.lb_url == "https://10.251.9.1:18874"
    assert ports(base).isdisjoint(ports(moved))
    assert isinstance(base.db_server, cluster_db.PostgresServer)
    assert moved.db_server.name == "mariadb"
    assert moved.db_server.port == cluster.MARIADB_PORT + 100
    assert moved.db_server.url("volumesvc").startswith("mysql+pymysql://")


def test_cluster_options_reach_the_deployment():
    args = cluster._parse_args(["start", "--database", "mariadb", "--compute-driver", "fake",
                                "--port-offset", "200"])
    assert (args.database, args.compute_driver, args.port_offset) == ("mariadb", "fake", 200)
    assert cluster._parse_args([]).database == "postgresql"
    with pytest.raises(SystemExit):
        cluster._parse_args(["--database", "sqlite"])


def test_fake_compute_driver_is_set_per_compute(tmp_path):
    fake = _ini(cluster_config.write_compute_config(str(tmp_path), host="c1",
                                                    my_ip="10.251.7.11", compute_driver="fake"))
    assert fake["DEFAULT"]["compute_driver"] == "fake"
    assert fake["DEFAULT"]["my_ip"] == "10.251.7.11"
    real = _ini(cluster_config.write_compute_config(str(tmp_path), host="c2",
                                                    my_ip="10.251.7.12"))
    # libvirt is the shared file's driver: the compute's own file leaves it alone.
    assert "compute_driver" not in real["DEFAULT"]


def test_shared_config_with_keystone_sends_service_tokens_and_defines_the_ceph_secret(
        tmp_path):
    # The harness's sections need no running Keystone (its password is made on first use).
    identity = cluster_config.ClusterKeystone(str(tmp_path / "keystone"), address="10.251.7.1",
                                              port=15000)
    path = cluster_config.write_cluster_config(
        str(tmp_path / "volumesvc.conf"), state_dir=str(tmp_path), transport_url="rabbit://",
        database_url="sqlite://", cinder_url="http://10.251.7.1:18776/v3",
        glance_url="http://10.251.7.1:19292", subnet="10.251.7.0/24",
        key_manager_url="http://10.251.7.1:19311", keystone=identity,
        rbd={"user": "cinder", "secret_uuid": "U", "keyring": "/k"})
    conf = _ini(path)
    assert conf["api"]["auth_strategy"] == "keystone"
    assert conf["cinder"]["auth_strategy"] == conf["glance"]["auth_strategy"] == "keystone"
    assert conf["cinder"]["username"] == "volumesvc"
    assert conf["service_user"]["send_service_user_token"] == "true"
    assert conf["barbican"]["send_service_user_token"] == "true"
    assert conf["keystone_authtoken"]["auth_url"] == "http://10.251.7.1:15000/v3"
    assert conf["keystone_authtoken"]["service_token_roles_required"] == "true"
    assert (conf["libvirt"]["rbd_user"], conf["libvirt"]["rbd_secret_uuid"],
            conf["libvirt"]["rbd_keyring"]) == ("cinder", "U", "/k")
    # Without Keystone: noauth, and no service token to send.
    plain = _ini(cluster_config.write_cluster_config(
        str(tmp_path / "plain.conf"), state_dir=str(tmp_path), transport_url="rabbit://",
        database_url="sqlite://", cinder_url="c", glance_url="g", subnet="10.251.7.0/24"))
    assert plain["api"]["auth_strategy"] == "noauth2"
    assert plain["service_user"]["send_service_user_token"] == "false"


def test_a_compute_connects_to_its_hosts_daemon(tmp_path):
    uri = "qemu+unix:///system?socket=/s/c1/run/libvirt-sock"
    conf = _ini(cluster_config.write_compute_config(str(tmp_path), host="c1",
                                                    my_ip="10.251.7.11", connection_uri=uri))
    assert conf["libvirt"]["connection_uri"] == uri
    assert not (tmp_path / "libvirt-c1").exists()


def test_cluster_keystone_is_on_the_bridge(tmp_path):
    identity = cluster_config.ClusterKeystone(str(tmp_path), address="10.251.7.1", port=15000)
    assert identity.url == "http://10.251.7.1:15000/v3"
    ((_, argv),) = identity._commands()
    assert "10.251.7.1:15000" in argv and not any("127.0.0.1" in a for a in argv)


def test_auth_option_defaults_to_keystone():
    assert cluster._parse_args([]).auth == "keystone"
    assert cluster._parse_args(["--auth", "noauth2"]).auth == "noauth2"
    with pytest.raises(ValueError, match="unknown auth"):
        cluster.Cluster("/tmp/x", auth="none")


def test_stop_finds_the_processes_a_killed_run_configured_through_their_environment(
        tmp_path):
    """Regression: after a SIGKILL of ``start`` the RabbitMQ nodes, which name the state
    dir only in their environment (RABBITMQ_CONFIG_FILE...), outlived ``stop``."""
    root = f"{tmp_path}/"
    node = subprocess.Popen(["sleep", "60"], env={"RABBITMQ_CONFIG_FILE": f"{root}n1/r.conf"})
    shell = subprocess.Popen(["sleep", "60"], env={"PWD": root, "OLDPWD": root})
    try:
        found = cluster.pids_with_environment_naming(root)
        assert node.pid in found
        assert shell.pid not in found
    finally:
        for proc in (node, shell):
            proc.kill()
            proc.wait(10)


def test_tls_configuration_of_every_link(tmp_path):
    """RabbitMQ with a TLS listener only, PostgreSQL hostssl only, HAProxy re-encrypting,
    API nodes on HTTPS, volumesvc and Cinder verifying against the deployment's CA."""
    from volumesvc_aio import tls

    (tmp_path / "ca").mkdir()
    authority = tls.Authority(tmp_path / "ca", days=30)
    node = rabbit.ClusterNode(str(tmp_path), "n1", "10.251.7.1", 5701, authority=authority)
    assert "RABBITMQ_NODE_PORT" not in node.env()
    node.configure()
    conf = (tmp_path / "n1" / "rabbitmq.conf").read_text()
    assert "listeners.tcp = none\n" in conf
    assert "listeners.ssl.default = 10.251.7.1:5701\n" in conf

    server = cluster_db.PostgresServer(str(tmp_path), "10.251.7.1", 5442, "10.251.7.0/24",
                                       authority=authority)
    assert server.url("volumesvc").endswith(
        f"/volumesvc?sslmode=verify-full&sslrootcert={authority.ca_file.replace('/', '%2F')}")

    shared = _ini(cluster_config.write_cluster_config(
        str(tmp_path / "volumesvc.conf"), state_dir=str(tmp_path), transport_url="rabbit://",
        database_url="sqlite://", cinder_url="http://10.251.7.1:18776/v3",
        glance_url="http://10.251.7.1:19292", subnet="10.251.7.0/24",
        ca_file=authority.ca_file))
    assert shared["oslo_messaging_rabbit"]["ssl"] == "true"
    assert shared["oslo_messaging_rabbit"]["ssl_ca_file"] == authority.ca_file

    cert, key = authority.issue("api", ip="10.251.7.1")
    api = _ini(cluster_config.write_api_config(str(tmp_path), name="api-1",
                                               address="10.251.7.1", port=18781,
                                               tls=(cert, key)))
    assert (api["wsgi"]["ssl_cert_file"], api["wsgi"]["ssl_key_file"]) == (cert, key)

    pem = tls.bundle(str(tmp_path / "haproxy.pem"), cert, key)
    haproxy.write_config(str(tmp_path / "haproxy.cfg"), bind="10.251.7.1:18774",
                         backends=[("api-1", "10.251.7.1:18781")],
                         tls=(pem, authority.ca_file))
    text = (tmp_path / "haproxy.cfg").read_text()
    assert f"bind 10.251.7.1:18774 ssl crt {pem}\n" in text
    assert (f"server api-1 10.251.7.1:18781 ssl verify required ca-file "
            f"{authority.ca_file} check") in text

    cinder = cluster_config.ClusterCinder(
        str(tmp_path / "cinder"), address="10.251.7.1", port=18776,
        transport_url="rabbit://", database_connection="sqlite://",
        nova_endpoint="https://10.251.7.1:18774/v2.1", ca_file=authority.ca_file)
    parser = configparser.ConfigParser(interpolation=None, strict=False)
    parser.read_string(cinder.config_text())
    assert parser["nova"]["cafile"] == authority.ca_file
    assert parser["nova"]["endpoint"] == "https://10.251.7.1:18774/v2.1"
    assert parser["oslo_messaging_rabbit"]["ssl_ca_file"] == authority.ca_file


def test_certificates_verify_against_the_authority(tmp_path):
    import ssl

    from volumesvc_aio import tls

    authority = tls.Authority(tmp_path, days=30)
    cert, key = authority.issue("api", ip="10.251.7.1")
    server = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    server.load_cert_chain(cert, key)
    client = ssl.create_default_context(cafile=authority.ca_file)
    assert client.verify_mode == ssl.CERT_REQUIRED
    assert os.stat(key).st_mode & 0o777 == 0o600


def test_services_run_as_the_service_user_and_privsep_through_sudo(tmp_path):
    from volumesvc_aio import system

    c = cluster.Cluster(str(tmp_path), prefix="vsx", subnet="10.251.7.0/24")
    c.extra_confs["conductor-1"] = str(tmp_path / "conductor-1.conf")
    argv = c.argv_of("conductor-1")
    assert argv[:6] == ["setpriv", f"--reuid={system.SERVICE_USER}",
                        f"--regid={system.SERVICE_USER}", "--init-groups", "--pdeathsig",
                        "TERM"]
    assert c._service_env()["HOME"] == c.service_dir
    helper = c._privsep_helper("vsx-compute-1")
    assert f"--config-file {tmp_path}/compute-vsx-compute-1.conf" in helper
    compute = _ini(cluster_config.write_compute_config(
        str(tmp_path), host="vsx-compute-1", my_ip="10.251.7.11",
        privsep_helper=f"sudo {helper}"))
    assert compute["privsep_osbrick"]["helper_command"] == f"sudo {helper}"
    assert compute["privsep_volumesvc"]["helper_command"] == f"sudo {helper}"
    rules = system.privsep_sudoers(system.SERVICE_USER, helper)
    assert rules.count("NOPASSWD:") == len(system.PRIVSEP_CONTEXTS)
    assert cluster.sudoers_path("vsx") == "/etc/sudoers.d/volumesvc-cluster-vsx"
