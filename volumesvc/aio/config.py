"""The all-in-one's volumesvc.conf, readiness probe and starter image."""

import os
import textwrap


def write_config(state_dir, *, transport_url, api_port, api_workers, host,
                 cinder_url, glance_url):
    """Write ``<state_dir>/volumesvc.conf`` for api, conductor and compute.

    One file for all three processes, as an operator would have on one
    machine: SQLite in WAL mode under the state dir, embedded QEMU, noauth2,
    the Cinder and Glance this all-in-one started.
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

        [cinder]
        auth_strategy = noauth
        endpoint_override = {cinder_url}

        [glance]
        auth_strategy = noauth
        endpoint_override = {glance_url}

        [oslo_concurrency]
        lock_path = {state_dir}/locks
        """)
    with open(path, "w") as f:
        f.write(text)
    return path


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
STARTER_IMAGE_BYTES = 1 << 20


def ensure_image(glance_url, state_dir, owner="admin"):
    """Upload one small public raw image so image-backed boot works out of the box.

    Idempotent: an active image of the same name is reused across restarts.
    Returns the image id.
    """
    import json
    import urllib.request

    def request(method, path, body=None, content_type="application/json"):
        req = urllib.request.Request(glance_url + path, data=body, method=method,
                                     headers={"Content-Type": content_type})
        with urllib.request.urlopen(req, timeout=30) as resp:
            data = resp.read()
            return json.loads(data) if data else None

    found = request("GET", f"/v2/images?name={STARTER_IMAGE_NAME}")["images"]
    for image in found:
        if image["status"] == "active":
            return image["id"]
    image = request("POST", "/v2/images", json.dumps({
        "name": STARTER_IMAGE_NAME, "disk_format": "raw", "container_format": "bare",
        "visibility": "public", "owner": owner, "min_disk": 1}).encode())
    # A raw disk of zeros: no guest OS is needed, QEMU only has to open it.
    request("PUT", f"/v2/images/{image['id']}/file", b"\0" * STARTER_IMAGE_BYTES,
            content_type="application/octet-stream")
    return image["id"]
