"""The all-in-one's volumesvc.conf, readiness probe and starter image."""

import os
import textwrap

from volumesvc_aio import files

# What the noauth configuration says about service tokens; replaced by the
# volumesvc service user's section when a Keystone is in front.
NOAUTH_SERVICE_USER = """\
# noauth: Cinder takes no token, so there is no service token to send
# (with a Keystone a service user replaces this section).
[service_user]
send_service_user_token = false

"""


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
    text = textwrap.dedent(f"""\
        [DEFAULT]
        host = {host}
        state_path = {state_dir}
        transport_url = {transport_url}
        report_interval = 2
        service_down_time = 10
        compute_driver = libvirt
        debug = false
        # Domain names of their own: two all-in-ones on one machine share the
        # libvirt daemon, where both would otherwise name a first server
        # instance-00000001 (named after the API port, like the vhosts).
        instance_name_template = aio{api_port}-instance-%08x
        # Every guest gets at most guest_memory_cap_mb (below) whatever its
        # flavor says: place by flavor as if the host were far larger than it is.
        cpu_allocation_ratio = 1000.0
        ram_allocation_ratio = 1000.0

        [database]
        connection = sqlite:///{state_dir}/volumesvc.sqlite

        [api]
        auth_strategy = noauth2
        listen_host = 127.0.0.1
        listen_port = {api_port}
        workers = {api_workers}

        [libvirt]
        connection_uri = qemu:///embed?root={state_dir}/libvirt
        virt_type = qemu
        # The starter image's guest boots in 96 MiB (doc/source/admin/guest-image.rst).
        guest_memory_cap_mb = 128

        [cinder]
        auth_strategy = noauth
        endpoint_override = {cinder_url}

        [glance]
        auth_strategy = noauth
        endpoint_override = {glance_url}

        # noauth: Cinder takes no token, so there is no service token to send
        # (with a Keystone a service user replaces this section).
        [service_user]
        send_service_user_token = false

        [oslo_concurrency]
        lock_path = {state_dir}/locks

        [healthcheck]
        disable_by_file_path = {drain_file(state_dir)}
        detailed = true
        allowed_source_ranges = 127.0.0.0/8

        [metrics]
        enabled = true
        conductor_listen_port = {conductor_metrics_port}

        # No default limit on servers (benchmarks boot a thousand); a project
        # still gets the limits set for it with `openstack quota set`.
        [quota]
        instances = -1
        cores = -1
        ram = -1
        """)
    if failed_attachment_ttl is not None:
        text = text.replace("[api]\n", f"[api]\nfailed_attachment_ttl = {failed_attachment_ttl}\n",
                            1)
    if rbd is not None:
        text = text.replace(f"connection_uri = qemu:///embed?root={state_dir}/libvirt\n",
                            f"connection_uri = {rbd['uri']}\n"
                            f"rbd_user = {rbd['user']}\n"
                            f"rbd_secret_uuid = {rbd['secret_uuid']}\n"
                            f"rbd_keyring = {rbd['keyring']}\n", 1)
    if key_manager_url is not None:
        text += key_manager_sections(key_manager_url, keystone)
        # NOTE: a boot from an image onto an encrypted type waits for Cinder to
        # make a LUKS container and convert the image into it; the container's
        # key derivation is tuned to two seconds of CPU, which on a small busy
        # machine stretches to minutes, past the default 180 s.
        text += "\n[compute]\nvolume_wait_timeout = 900\n"
    if keystone is not None:
        text = _with_keystone(text, keystone)
    # The transport URL, database URL and service passwords are in it.
    return files.write_private(path, text)


def key_manager_sections(url, keystone=None):
    """``[key_manager]`` and ``[barbican]``: castellan's Barbican backend at ``url``.

    With a Keystone the service token goes with the user's (castellan's
    ``[barbican_service_user]``), as Nova sends it.
    """
    text = textwrap.dedent(f"""
        [key_manager]
        backend = barbican

        [barbican]
        barbican_endpoint = {url}
        barbican_api_version = v1
        """)
    if keystone is None:
        return text
    return text + "\n".join([
        f"auth_endpoint = {keystone.url}", "send_service_user_token = true", "",
        *keystone.password_section("barbican_service_user", "volumesvc")])


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
    text = textwrap.dedent(f"""\
        [DEFAULT]
        host = {host}
        compute_driver = {driver}

        [libvirt]
        connection_uri = {connection_uri}

        [virt]
        disabled_capabilities = {",".join(disabled_capabilities)}
        """)
    if metrics_port is not None:
        text += f"\n[metrics]\ncompute_listen_port = {metrics_port}\n"
    with open(path, "w") as f:
        f.write(text)
    return path


def _with_keystone(text, keystone):
    """``text`` switched from noauth to keystone: authtoken, adapters, service token."""
    if NOAUTH_SERVICE_USER not in text:
        raise RuntimeError("the noauth [service_user] section is not in the template")
    text = text.replace(NOAUTH_SERVICE_USER, "")
    text = (text.replace("auth_strategy = noauth2", "auth_strategy = keystone")
                .replace("auth_strategy = noauth\n", "auth_strategy = keystone\n"))
    lines = text.splitlines()
    for group in ("cinder", "glance"):
        # keystoneauth credentials for calls made without a user (periodic tasks).
        at = lines.index(f"[{group}]") + 1
        lines[at:at] = keystone.password_section(group, "volumesvc")[1:-1]
    lines += ["", *keystone.authtoken_section("volumesvc"),
              *keystone.password_section("service_user", "volumesvc",
                                         extra=["send_service_user_token = true"])]
    return "\n".join(lines) + "\n"


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
