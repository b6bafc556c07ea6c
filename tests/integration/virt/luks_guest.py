"""Shared by the real-QEMU tests of encrypted volumes: LUKS volumes, secrets, the guest's console.

The volumes are files in LUKS format made with ``cryptsetup`` (as os-brick
formats a volume, with the key's passphrase), behind FakeCinder's
encryption metadata and the in-memory key manager; the guest is the
project's starter image, whose user data script prints on its console (the
console contract in doc/source/admin/guest-image.rst).
"""

import base64
import os
import subprocess
import tempfile
import time
import uuid

from tests.fixtures.cinder import FakeCinder
from tests.fixtures.keymgr import FakeKeyManager
from volumesvc import context as vs_context
from volumesvc import keymgr
from volumesvc.virt import instance_path
from volumesvc_aio import guest_image

LUKS = {"provider": "luks", "cipher": "aes-xts-plain64", "key_size": 256,
        "control_location": "front-end"}
LUKS_MAGIC = b"LUKS\xba\xbe"
BOOT_TIMEOUT = 300  # TCG on two shared cores


def console_text(path):
    """The guest's console log so far ("" before QEMU made it)."""
    try:
        with open(path, "rb") as f:
            return f.read().decode(errors="replace").replace("\r", "")
    except FileNotFoundError:
        return ""


def make_cloud(driver):
    """(FakeCinder with a LUKS type, the key manager adapter on the in-memory store, context)."""
    cinder = FakeCinder(volume_dir=os.path.join(driver.conf.state_path, "volumes"))
    store = FakeKeyManager()
    cinder.create_key = store.create_key
    cinder.create_volume_type("luks", encryption=LUKS)
    ctx = vs_context.RequestContext(user_id="u1", project_id="p1", auth_token="t")
    return cinder, keymgr.KeyManager(driver.conf, backend=store), ctx


def luks_volume(cinder, keys, ctx, size_mb=64, header_on_top=False):
    """A volume of the LUKS type, formatted as Cinder would with the key's passphrase.

    ``header_on_top``: the payload is the whole ``size_mb`` and the header
    comes on top, as Cinder's RBD driver (and the all-in-one's file driver)
    make an encrypted volume; else the header is taken out of ``size_mb``,
    as when a volume is formatted in place. Returns (volume id, backing
    file, passphrase, connection info).
    """
    volume = cinder.create(ctx, 1, "secret", "", volume_type="luks")
    passphrase = keymgr.passphrase(keys.get_key(ctx, volume["encryption_key_id"], volume["id"]))
    path = cinder._path(volume["id"])
    os.truncate(path, size_mb << 20)
    # cryptsetup, as os-brick formats a volume, with a fixed iteration count:
    # qemu-img's own benchmark of it fails on a busy host ("Unable to get
    # accurate CPU usage").
    made = subprocess.run(["cryptsetup", "--batch-mode", "luksFormat", "--type", "luks1",
                           "--pbkdf-force-iterations", "1000", "--key-file=-",
                           "--cipher", "aes-xts-plain64", "--key-size", "256", path],
                          input=passphrase, capture_output=True, text=True)
    assert made.returncode == 0, made.stderr
    if header_on_top:
        # LUKS1's payload is whatever follows the header.
        os.truncate(path, (size_mb << 20) + payload_offset(path))
    info = {"driver_volume_type": "local", "serial": volume["id"],
            "data": {"device_path": path, "volume_id": volume["id"], "encrypted": True}}
    return volume["id"], path, passphrase, info


def plain_volume(cinder, ctx, size_mb=64):
    """A volume of no encrypted type: (volume id, backing file, connection info)."""
    volume = cinder.create(ctx, 1, "plain", "")
    path = cinder._path(volume["id"])
    os.truncate(path, size_mb << 20)
    info = {"driver_volume_type": "local", "serial": volume["id"],
            "data": {"device_path": path, "volume_id": volume["id"]}}
    return volume["id"], path, info


def secret_of(driver, volume_id):
    """The volume's libvirt secret on the driver's host, or None."""
    conn = driver.host.get_connection()
    try:
        return conn.secretLookupByUsage(driver.libvirt.VIR_SECRET_USAGE_TYPE_VOLUME,
                                        volume_id)
    except driver.libvirt.libvirtError:
        return None


def plaintext(path, passphrase, length):
    """The first ``length`` bytes inside the container, decrypted by qemu-img on the host."""
    with tempfile.TemporaryDirectory(dir="/var/tmp") as tmp:
        out = os.path.join(tmp, "plain")
        subprocess.run(["qemu-img", "convert", "--object",
                        f"secret,id=sec0,data={passphrase}", "--image-opts",
                        f"driver=luks,key-secret=sec0,file.filename={path}",
                        "-O", "raw", out], check=True, capture_output=True)
        with open(out, "rb") as f:
            return f.read(length)


def wait_console(path, needle, timeout=BOOT_TIMEOUT, since=0):
    """The console log once it holds ``needle`` after its first ``since`` characters."""
    deadline = time.monotonic() + timeout
    while needle not in (text := console_text(path))[since:]:
        assert time.monotonic() < deadline, text[-3000:]
        time.sleep(0.5)
    return text


def boot(driver, name, script):
    """Boot the starter guest with ``script`` as its user data: (instance, console log path)."""
    root = os.path.join(driver.conf.state_path, f"root-{uuid.uuid4()}")
    subprocess.run(["cp", "--sparse=always", guest_image.ensure_image(), root], check=True)
    instance = dict(uuid=str(uuid.uuid4()), memory_mb=256, vcpus=1, config_drive="True",
                    display_name=name, hostname=name,
                    user_data=base64.b64encode(script.encode()).decode())
    root_disk = dict(connection_info={"driver_volume_type": "local", "serial": "root",
                                      "data": {"device_path": root}},
                     mount_device="/dev/sda", boot_index=0, disk_bus="scsi",
                     device_type="disk")
    driver.spawn(instance, {"root_device_name": "/dev/sda",
                            "block_device_mapping": [root_disk]})
    return instance, instance_path.console_log(driver.conf, instance["uuid"])


def wait_for_disk(volume_id):
    """Shell lines setting ``$dev`` once the volume's disk shows in the guest (hot-plugged)."""
    return (f"i=0; until dev=$(vsdisk {volume_id}); do i=$((i+1)); "
            f"[ $i -gt 240 ] && exit 3; sleep 1; done\n")


def payload_offset(path):
    """The LUKS header's size, as cryptsetup wrote it (bytes before the data)."""
    out = subprocess.run(["cryptsetup", "luksDump", path], capture_output=True, text=True,
                         check=True).stdout
    (line,) = [line for line in out.splitlines() if line.startswith("Payload offset:")]
    return int(line.split(":")[1]) * 512
