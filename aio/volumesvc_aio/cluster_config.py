"""Configuration files of the cluster deployment (``volumesvc_aio.cluster``).

One ``volumesvc.conf`` every node reads (as an operator would copy to each
machine), plus a small file per API node (its listen address) and per
compute (host name, ``my_ip``, its own libvirt daemon or QEMU root). Every
address is the bridge's or a namespace's: nothing points at loopback.
Authentication is written the all-in-one's way (``volumesvc_aio.config``):
noauth first, switched to Keystone with service tokens when one is given.
"""

import os

from volumesvc_aio import barbican as barbican_mod
from volumesvc_aio import cinder as cinder_mod
from volumesvc_aio import config as aio_config
from volumesvc_aio import glance as glance_mod
from volumesvc_aio import keystone as keystone_mod


def write_cluster_config(path, *, state_dir, transport_url, database_url, cinder_url,
                         glance_url, subnet, key_manager_url=None, overrides=None,
                         keystone=None, rbd=None, ca_file=None):
    """The shared file: RabbitMQ cluster with quorum queues, the database, Cinder, Glance.

    ``key_manager_url``: the Barbican that keeps encrypted volumes' keys.
    ``keystone``: a started Keystone harness: the API validates tokens, the
    adapters authenticate as the ``volumesvc`` user and send a service token
    to Cinder and Barbican (noauth2 without it).
    ``rbd`` (``{"user": ..., "secret_uuid": ..., "keyring": ...}``): every
    compute defines the Ceph secret in its libvirt daemon at start.
    ``overrides``: ``{section: {option: value}}`` laid over the rest (a benchmark's).
    ``ca_file``: the deployment's CA; RabbitMQ is reached over TLS verified
    against it (the database URL carries its own TLS parameters).
    """
    for sub in ("locks", "logs"):
        os.makedirs(os.path.join(state_dir, sub), exist_ok=True)
    sections = {
        "DEFAULT": {
            "state_path": state_dir, "transport_url": transport_url, "report_interval": 2,
            "service_down_time": 10, "compute_driver": "libvirt",
            "graceful_shutdown_timeout": 10,
            # Every "host" is this one machine and every guest gets at most
            # guest_memory_cap_mb (below): place by flavor as if hosts were far
            # larger than they are.
            "cpu_allocation_ratio": "1000.0", "ram_allocation_ratio": "1000.0"},
        "oslo_messaging_rabbit": {"rabbit_quorum_queue": True,
                                  "heartbeat_timeout_threshold": 15},
        # An attach abandoned by a conductor killed in the middle of it is
        # finished or rolled back after a minute, not the default ten.
        "compute": {"attachment_reservation_timeout": 60},
        # An accepted attach or detach, and a move, whose conductor was
        # killed before the work started are run again after 20 s, not a minute.
        "conductor": {"move_request_grace": 20, "volume_request_grace": 20},
        "database": {"connection": database_url},
        "api": {"auth_strategy": "noauth2", "workers": 2},
        # The starter image's guest boots in 96 MiB (doc/source/admin/guest-image.rst).
        "libvirt": {"virt_type": "qemu", "guest_memory_cap_mb": 128},
        # The fault storms boot more servers than Nova's default limits allow
        # one project; a project still gets what `openstack quota set` gives it.
        "quota": {"instances": -1, "cores": -1, "ram": -1},
        "cinder": {"auth_strategy": "noauth", "endpoint_override": cinder_url},
        "glance": {"auth_strategy": "noauth", "endpoint_override": glance_url},
        # noauth: Cinder takes no token, so there is no service token to send.
        "service_user": {"send_service_user_token": False},
        "oslo_concurrency": {"lock_path": f"{state_dir}/locks"},
        "healthcheck": {"detailed": True, "allowed_source_ranges": subnet},
    }
    if ca_file is not None:
        sections["oslo_messaging_rabbit"].update(ssl=True, ssl_ca_file=ca_file)
    if rbd is not None:
        sections["libvirt"].update(rbd_user=rbd["user"], rbd_secret_uuid=rbd["secret_uuid"],
                                   rbd_keyring=rbd["keyring"])
    if key_manager_url is not None:
        sections.update(aio_config.key_manager_sections(key_manager_url, keystone))
    if keystone is not None:
        sections = aio_config._with_keystone(sections, keystone)
    # The transport URL and the database URL (with its password) are in it.
    return aio_config.write_config_file(
        path, aio_config.merge_config(sections, overrides or {}), private=True)


def write_conductor_config(state_dir, *, name):
    """One conductor: its own host name, so each has its own service record."""
    return aio_config.write_config_file(os.path.join(state_dir, f"{name}.conf"),
                                        {"DEFAULT": {"host": name}})


def write_api_config(state_dir, *, name, address, port, tls=None):
    """One API node: its host name, where its gunicorn listens, its own drain file.

    ``tls``: (certificate file, key file): the node serves HTTPS only.
    """
    sections = {
        "DEFAULT": {"host": name},
        "api": {"listen_host": address, "listen_port": port},
        "healthcheck": {"disable_by_file_path": f"{state_dir}/{name}-healthcheck-disable"}}
    if tls is not None:
        sections["wsgi"] = {"ssl_cert_file": tls[0], "ssl_key_file": tls[1]}
    return aio_config.write_config_file(os.path.join(state_dir, f"{name}.conf"), sections)


def compute_config_path(state_dir, host):
    """Where :func:`write_compute_config` writes ``host``'s file."""
    return os.path.join(state_dir, f"compute-{host}.conf")


def write_compute_config(state_dir, *, host, my_ip, compute_driver="libvirt",
                         connection_uri=None, privsep_helper=None):
    """One compute: its host name, address (what Cinder gets in the connector), libvirt.

    ``connection_uri``: the host's own libvirt daemon; without it an
    embedded QEMU root of its own.
    ``compute_driver = fake`` keeps the compute's process, namespace,
    address and RPC but starts no guest: what a storm of a thousand servers
    on a machine of two cores needs (the driver logic is libvirt's, on a
    libvirt double).
    ``privsep_helper``: the command (with its ``sudo``) that starts the
    compute's privsep daemons as root, the one the sudoers rules name.
    """
    if connection_uri is None:
        root = os.path.join(state_dir, f"libvirt-{host}")
        os.makedirs(root, exist_ok=True)
        connection_uri = f"qemu:///embed?root={root}"
    driver = None if compute_driver == "libvirt" else compute_driver
    # Each host its own instances directory, as separate machines have: a
    # live migration writes the arriving guest's files in the destination's.
    sections = {"DEFAULT": {"host": host, "my_ip": my_ip, "compute_driver": driver,
                            "instances_path": os.path.join(state_dir, "instances", host)},
                "libvirt": {"connection_uri": connection_uri}}
    if privsep_helper is not None:
        for group in ("privsep_osbrick", "privsep_volumesvc"):
            sections[group] = {"helper_command": privsep_helper}
    return aio_config.write_config_file(compute_config_path(state_dir, host), sections)


class ClusterCinder(cinder_mod.CinderHarness):
    """The all-in-one's Cinder, listening on the bridge address instead of loopback.

    ``ca_file``: the deployment's CA: Cinder reaches RabbitMQ over TLS and
    the compute API (volume events, extend completion) over HTTPS, both
    verified against it.
    """

    def __init__(self, state_dir, *, address, ca_file=None, **kwargs):
        self.address = address
        self.ca_file = ca_file
        super().__init__(state_dir, **kwargs)

    @property
    def endpoint(self):
        return f"http://{self.address}:{self.port}"

    def config_text(self):
        """Cinder on the bridge address, its queues quorum queues like ours.

        Classic queues live on the one RabbitMQ node that declared them: with
        that node stopped, Cinder's casts to its scheduler and volume service
        (volume creates, attachment updates) went nowhere and boots from
        volume waited on volumes stuck ``creating``. Quorum queues are
        replicated over the cluster, as a deployment with a RabbitMQ cluster
        configures every OpenStack service.
        """
        text = (super().config_text()
                .replace("my_ip = 127.0.0.1", f"my_ip = {self.address}")
                .replace("osapi_volume_listen = 127.0.0.1",
                         f"osapi_volume_listen = {self.address}")
                + "\n[oslo_messaging_rabbit]\nrabbit_quorum_queue = true\n"
                "heartbeat_timeout_threshold = 15\n")
        if self.ca_file is not None:
            # oslo.config merges a section named twice in one file.
            text += (f"ssl = true\nssl_ca_file = {self.ca_file}\n"
                     f"\n[nova]\ncafile = {self.ca_file}\n")
        return text


class _OnBridge:
    """A gunicorn-served harness of the all-in-one bound to the bridge address, not loopback."""

    def __init__(self, state_dir, *, address, **kwargs):
        self.address = address
        super().__init__(state_dir, **kwargs)

    @property
    def url(self):
        return f"http://{self.address}:{self.port}"

    def _commands(self):
        return [(name, [a.replace("127.0.0.1:", f"{self.address}:") for a in argv])
                for name, argv in super()._commands()]


class ClusterGlance(_OnBridge, glance_mod.GlanceHarness):
    """The all-in-one's Glance, listening on the bridge address instead of loopback."""

    def config_text(self):
        return super().config_text().replace("bind_host = 127.0.0.1",
                                             f"bind_host = {self.address}")


class ClusterBarbican(_OnBridge, barbican_mod.BarbicanHarness):
    """The all-in-one's Barbican on the bridge address, where the computes' namespaces reach it."""


class ClusterKeystone(_OnBridge, keystone_mod.KeystoneHarness):
    """The all-in-one's Keystone on the bridge address: the computes get service tokens there."""

    @property
    def url(self):
        """The identity v3 endpoint on the bridge (``auth_url`` of every client)."""
        return f"http://{self.address}:{self.port}/v3"
