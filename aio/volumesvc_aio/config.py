"""The all-in-one's volumesvc.conf, readiness probe and starter image."""

import configparser
import os

from volumesvc_aio import files


def render_config(sections):
    """``{section: {option: value}}`` as oslo.config's INI text, sections in order.

    The one writer of every ``volumesvc.conf`` the lab makes (the
    all-in-one's, the cluster's, the storm stack's, the integration tests'
    deployments). A value of None leaves its option out; True and False are
    written as oslo.config reads them; a list or tuple is comma-separated.
    """
    lines = []
    for section, options in sections.items():
        lines.append(f"[{section}]")
        for name, value in options.items():
            if value is None:
                continue
            if isinstance(value, bool):
                value = "true" if value else "false"
            elif isinstance(value, (list, tuple)):
                value = ",".join(str(v) for v in value)
            lines.append(f"{name} = {value}")
        lines.append("")
    return "\n".join(lines)


def parse_config(text):
    """INI ``text`` as ``{section: {option: value}}`` (the inverse of :func:`render_config`)."""
    # NOTE: oslo.config's [DEFAULT] is a section like any other, not
    # configparser's defaults for every section; option names keep their case.
    parser = configparser.ConfigParser(interpolation=None, strict=False,
                                       default_section="\0no default section")
    parser.optionxform = str  # type: ignore[assignment,method-assign]
    parser.read_string(text)
    return {section: dict(parser[section]) for section in parser.sections()}


def merge_config(sections, *more):
    """``sections`` with each of ``more`` laid over it, option by option (a new dict)."""
    merged = {section: dict(options) for section, options in sections.items()}
    for extra in more:
        for section, options in extra.items():
            merged.setdefault(section, {}).update(options)
    return merged


def write_config_file(path, sections, *, private=False):
    """Write :func:`render_config` of ``sections`` to ``path``; returns ``path``.

    ``private``: readable by the owner only (a transport URL, database URL
    or password is in it).
    """
    text = render_config(sections)
    if private:
        return files.write_private(path, text)
    with open(path, "w") as f:
        f.write(text)
    return path


def write_config(state_dir, *, transport_url, api_port, api_workers, host,
                 cinder_url, glance_url, keystone=None, failed_attachment_ttl=None,
                 rbd=None, conductor_metrics_port=9780, key_manager_url=None):
    """Write ``<state_dir>/volumesvc.conf`` for api, conductor and compute.

    One file for all three processes, as an operator would have on one
    machine: SQLite in WAL mode under the state dir, embedded QEMU, the
    Cinder and Glance this all-in-one started. Without ``keystone`` (a
    started KeystoneHarness) everything is noauth2/noauth; with it the API
    validates tokens and the adapters authenticate as the ``volumesvc``
    user, sending a service token to Cinder.

    ``rbd`` (``{"uri": ..., "user": ..., "secret_uuid": ..., "keyring": ...}``):
    the computes connect to that libvirt daemon (``qemu:///system``) instead of
    an embedded QEMU each, and define the Ceph secret from the keyring at start.

    ``key_manager_url``: the Barbican the computes read encrypted volumes'
    keys from (castellan's ``[key_manager]`` and ``[barbican]``), with the
    user's token (noauth2: a ``user:project`` token the all-in-one's
    Barbican understands).
    """
    path = os.path.join(state_dir, "volumesvc.conf")
    for sub in ("libvirt", "locks", "logs"):
        os.makedirs(os.path.join(state_dir, sub), exist_ok=True)
    libvirt = {"connection_uri": f"qemu:///embed?root={state_dir}/libvirt"}
    if rbd is not None:
        libvirt = {"connection_uri": rbd["uri"], "rbd_user": rbd["user"],
                   "rbd_secret_uuid": rbd["secret_uuid"], "rbd_keyring": rbd["keyring"]}
    sections = {
        "DEFAULT": {
            "host": host, "state_path": state_dir, "transport_url": transport_url,
            "report_interval": 2, "service_down_time": 10, "compute_driver": "libvirt",
            "debug": False,
            # Domain names of their own: two all-in-ones on one machine share
            # the libvirt daemon, where both would otherwise name a first
            # server instance-00000001 (named after the API port, like the vhosts).
            "instance_name_template": f"aio{api_port}-instance-%08x",
            # Every guest gets at most guest_memory_cap_mb (below) whatever its
            # flavor says: place by flavor as if the host were far larger than it is.
            "cpu_allocation_ratio": "1000.0", "ram_allocation_ratio": "1000.0",
            # One compute: a resize stays on it, as on a single-node devstack.
            "allow_resize_to_same_host": True},
        "database": {"connection": f"sqlite:///{state_dir}/volumesvc.sqlite"},
        "api": {"failed_attachment_ttl": failed_attachment_ttl, "auth_strategy": "noauth2"},
        "wsgi": {"listen_host": "127.0.0.1", "listen_port": api_port, "workers": api_workers},
        # The starter image's guest boots in 96 MiB (doc/source/admin/guest-image.rst).
        "libvirt": {**libvirt, "virt_type": "qemu", "guest_memory_cap_mb": 128},
        "cinder": {"auth_strategy": "noauth", "endpoint_override": cinder_url},
        "glance": {"auth_strategy": "noauth", "endpoint_override": glance_url},
        # noauth: Cinder takes no token, so there is no service token to send
        # (with a Keystone a service user replaces this section).
        "service_user": {"send_service_user_token": False},
        "oslo_concurrency": {"lock_path": f"{state_dir}/locks"},
        "healthcheck": {"disable_by_file_path": drain_file(state_dir), "detailed": True,
                        "allowed_source_ranges": "127.0.0.0/8"},
        "metrics": {"enabled": True, "conductor_listen_port": conductor_metrics_port},
        # No default limit on servers (benchmarks boot a thousand); a project
        # still gets the limits set for it with `openstack quota set`.
        "quota": {"instances": -1, "cores": -1, "ram": -1},
    }
    if key_manager_url is not None:
        sections.update(key_manager_sections(key_manager_url, keystone))
        # NOTE: a boot from an image onto an encrypted type waits for Cinder to
        # make a LUKS container and convert the image into it; the container's
        # key derivation is tuned to two seconds of CPU, which on a small busy
        # machine stretches to minutes, past the default 180 s.
        sections["compute"] = {"volume_wait_timeout": 900}
    if keystone is not None:
        sections = _with_keystone(sections, keystone)
    # The transport URL, database URL and service passwords are in it.
    return write_config_file(path, sections, private=True)


def _options(section_lines):
    """A harness's ``["[group]", "name = value", ...]`` as ``{name: value}``."""
    return dict(line.split(" = ", 1) for line in section_lines if " = " in line)


def key_manager_sections(url, keystone=None):
    """``[key_manager]`` and ``[barbican]``: castellan's Barbican backend at ``url``.

    With a Keystone the service token goes with the user's (castellan's
    ``[barbican_service_user]``), as Nova sends it.
    """
    sections = {"key_manager": {"backend": "barbican"},
                "barbican": {"barbican_endpoint": url, "barbican_api_version": "v1"}}
    if keystone is None:
        return sections
    sections["barbican"].update(auth_endpoint=keystone.url, send_service_user_token=True)
    sections["barbican_service_user"] = _options(
        keystone.password_section("barbican_service_user", "volumesvc"))
    return sections


def drain_file(state_dir):
    """The file whose presence makes ``/healthcheck`` answer 503 (drain the API)."""
    return os.path.join(state_dir, "healthcheck_disable")


def operator_urls(state_dir, api_port, service_metrics_ports=None):
    """The line the all-in-one prints for load balancers and monitoring.

    ``service_metrics_ports``: ``{process name: port}`` of the conductor's
    and computes' metrics.
    """
    line = (f"volumesvc-aio: health=http://127.0.0.1:{api_port}/healthcheck "
            f"(drain: touch {drain_file(state_dir)}) "
            f"metrics=http://127.0.0.1:{api_port}/metrics")
    for name, port in (service_metrics_ports or {}).items():
        line += f" {name}-metrics=http://127.0.0.1:{port}/metrics"
    return line


def compute_hosts(first_host, count):
    """The host names of ``count`` computes: ``first_host``, then ``-2``, ``-3``..."""
    return [first_host] + [f"{first_host}-{n}" for n in range(2, count + 1)]


def parse_compute_driver(spec):
    """``HOST=DRIVER[,-CAPABILITY...]`` → (host, driver, [disabled capabilities]).

    ``DRIVER`` is any ``[DEFAULT] compute_driver`` value; each ``-name``
    after it switches a capability off on that host (``[virt]
    disabled_capabilities``), e.g. ``aio-compute-2=libvirt,-supports_multiattach``
    for a hypervisor that cannot share a disk between servers.
    """
    host, sep, rest = spec.partition("=")
    parts = [p.strip() for p in rest.split(",")] if sep else []
    if not host.strip() or not parts or not parts[0]:
        raise ValueError(f"{spec!r}: expected HOST=DRIVER[,-CAPABILITY...]")
    disabled = []
    for part in parts[1:]:
        if not part.startswith("-") or len(part) < 2:
            raise ValueError(f"{spec!r}: {part!r} is not -CAPABILITY")
        disabled.append(part[1:])
    return host.strip(), parts[0], disabled


def write_compute_config(state_dir, *, host, first, driver="libvirt",
                         disabled_capabilities=(), connection_uri=None, metrics_port=None):
    """``<state_dir>/compute-<host>.conf``: what one compute overrides.

    Read after ``volumesvc.conf`` (a second ``--config-file``): its own host
    name (RPC server), driver and capabilities, and for every compute but
    the first its own embedded QEMU root, so two computes never share a
    libvirt state directory, as two machines would not. With
    ``connection_uri`` (a libvirt daemon's) every compute uses that one
    daemon: domain names and UUIDs are unique per deployment, and every
    compute must be able to open every RBD volume.
    """
    if connection_uri is None:
        root = os.path.join(state_dir, "libvirt" if first else f"libvirt-{host}")
        os.makedirs(root, exist_ok=True)
        connection_uri = f"qemu:///embed?root={root}"
    path = os.path.join(state_dir, f"compute-{host}.conf")
    sections = {"DEFAULT": {"host": host, "compute_driver": driver},
                "libvirt": {"connection_uri": connection_uri},
                "virt": {"disabled_capabilities": list(disabled_capabilities)}}
    if metrics_port is not None:
        sections["metrics"] = {"compute_listen_port": metrics_port}
    return write_config_file(path, sections)


def _with_keystone(sections, keystone):
    """``sections`` switched from noauth to keystone: authtoken, adapters, service token."""
    keystone_sections = {
        "api": {"auth_strategy": "keystone"},
        # keystoneauth credentials for calls made without a user (periodic tasks).
        **{group: {"auth_strategy": "keystone",
                   **_options(keystone.password_section(group, "volumesvc"))}
           for group in ("cinder", "glance")},
        "keystone_authtoken": _options(keystone.authtoken_section("volumesvc")),
        "service_user": _options(keystone.password_section(
            "service_user", "volumesvc", extra=["send_service_user_token = true"])),
    }
    without_noauth = {name: options for name, options in sections.items()
                      if name != "service_user"}
    return merge_config(without_noauth, keystone_sections)


def compute_is_up(conf_path, host):
    """True once the compute on ``host`` has heartbeated recently."""
    from volumesvc import binaries, context, servicegroup
    from volumesvc import conf as vs_conf
    from volumesvc.db import api as db_api
    from volumesvc.objects import service as service_obj

    conf = vs_conf.get_conf(args=["--config-file", conf_path], default_config_files=[])
    db = db_api.Database(conf)
    try:
        services = service_obj.list_services(
            db, context.get_admin_context(), binary=binaries.COMPUTE, host=host)
        return any(servicegroup.is_up(conf, s) for s in services)
    finally:
        db.dispose()


STARTER_IMAGE_NAME = "volumesvc-tiny-raw"


def ensure_image(glance_url, state_dir, owner="admin", token=None, name=STARTER_IMAGE_NAME,
                 log=None):
    """Upload the guest image as a public raw image, so boots work out of the box.

    The image is the project's own Linux guest (guest_image.py; its console
    says what it sees of its disks, doc/source/admin/guest-image.rst), built
    on first use and cached. Idempotent: an active image of that name with
    the same content is reused across restarts. One with other content (a
    build from older packages or scripts) is renamed ``<name>-<its id's
    first 8 characters>``, keeping what was made from it, and the current
    build is uploaded under ``name``.
    ``token``: an admin's keystone token when Glance validates tokens.
    ``name``: another name makes another image of the same bytes (tempest's
    second image).
    Returns the image id.
    """
    import hashlib
    import json
    import urllib.request

    from volumesvc_aio import guest_image

    def request(method, path, body=None, content_type="application/json", timeout=30):
        headers = {"Content-Type": content_type}
        if token:
            headers["X-Auth-Token"] = token
        req = urllib.request.Request(glance_url + path, data=body, method=method,
                                     headers=headers)
        with urllib.request.urlopen(req, timeout=timeout) as resp:
            data = resp.read()
            return json.loads(data) if data else None

    with open(guest_image.ensure_image(log=log), "rb") as f:
        data = f.read()
    # Glance's default hashing algorithm (os_hash_algo) is SHA-512.
    digest = hashlib.sha512(data).hexdigest()
    for image in request("GET", f"/v2/images?name={name}")["images"]:
        if image["status"] != "active":
            continue
        if image.get("os_hash_value") == digest:
            return image["id"]
        request("PATCH", f"/v2/images/{image['id']}", json.dumps([
            {"op": "replace", "path": "/name", "value": f"{name}-{image['id'][:8]}"}]).encode(),
            content_type="application/openstack-images-v2.1-json-patch")
    image = request("POST", "/v2/images", json.dumps({
        "name": name, "disk_format": "raw", "container_format": "bare",
        "visibility": "public", "owner": owner, "min_disk": 1}).encode())
    request("PUT", f"/v2/images/{image['id']}/file", data,
            content_type="application/octet-stream", timeout=300)
    return image["id"]
