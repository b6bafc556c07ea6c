"""volumesvc's privileged file access: what each function accepts, refuses and answers.

The privileged functions run in this process here (the context's client
mode off), so what is checked is the code the daemon runs; that the
daemon really runs them, as root beside an unprivileged compute, is
tests/integration/services/test_unprivileged_compute.py.
"""

import os
import struct

import pytest

from volumesvc import privsep
from volumesvc.privsep import files


@pytest.fixture
def in_process():
    """Call the privileged functions directly instead of through a daemon."""
    privsep.dac_override_pctxt.set_client_mode(False)
    yield
    privsep.dac_override_pctxt.set_client_mode(True)


def _luks1(path, payload_sectors, size):
    """A file that starts like a LUKS1 header whose payload begins at ``payload_sectors``."""
    head = bytearray(592)
    head[:6] = b"LUKS\xba\xbe"
    struct.pack_into(">H", head, 6, 1)
    struct.pack_into(">I", head, 104, payload_sectors)
    path.write_bytes(bytes(head))
    os.truncate(path, size)
    return str(path)


def test_the_context_keeps_only_cap_dac_override():
    from oslo_privsep import capabilities as caps

    from volumesvc.conf import get_conf

    conf = get_conf(args=[], default_config_files=[])
    assert conf.privsep_volumesvc.capabilities == [caps.CAP_DAC_OVERRIDE]
    for func in (files.privileged_read_tail, files.privileged_luks_layout,
                 files.privileged_block_device_size, files.privileged_grow_file):
        assert privsep.dac_override_pctxt.is_entrypoint(func)


# -- read_tail: console logs only ------------------------------------------------

def test_a_console_log_and_its_rotations_are_read(in_process, tmp_path):
    log = tmp_path / "console.log"
    log.write_bytes(b"0123456789")
    (tmp_path / "console.log.0").write_bytes(b"older")
    assert files.privileged_read_tail(str(log), 4) == (b"6789", 6)
    assert files.privileged_read_tail(str(log) + ".0", 100) == (b"older", 0)


@pytest.mark.parametrize("name", ["shadow", "console.log.x", "console.logs", "my-console.log"])
def test_a_file_not_named_as_a_console_log_is_refused(in_process, tmp_path, name):
    path = tmp_path / name
    path.write_bytes(b"secret")
    with pytest.raises(ValueError, match="not a console log"):
        files.privileged_read_tail(str(path), 10)


@pytest.mark.parametrize("path", ["console.log", "/var/lib/volumesvc/../../etc/console.log",
                                  "/var//console.log", None])
def test_a_relative_or_unnormal_path_is_refused(in_process, path):
    with pytest.raises(ValueError, match="absolute normal path"):
        files.privileged_read_tail(path, 10)


@pytest.mark.parametrize("call", [lambda path: files.privileged_read_tail(path, 10),
                                  lambda path: files.privileged_grow_file(path, 100)],
                         ids=["read_tail", "grow_file"])
def test_a_symlink_is_not_followed(in_process, tmp_path, call):
    secret = tmp_path / "shadow"
    secret.write_bytes(b"secret")
    (tmp_path / "console.log").symlink_to(secret)
    with pytest.raises(OSError, match="Too many levels of symbolic links"):
        call(str(tmp_path / "console.log"))
    assert secret.read_bytes() == b"secret"


def test_a_console_log_that_is_no_regular_file_is_refused(in_process, tmp_path):
    (tmp_path / "console.log").mkdir()
    with pytest.raises(ValueError, match="not a regular file"):
        files.privileged_read_tail(str(tmp_path / "console.log"), 10)


@pytest.mark.parametrize("count", [0, -1, files.MAX_TAIL_BYTES + 1, "10", 1.5])
def test_a_count_out_of_bounds_is_refused(in_process, tmp_path, count):
    (tmp_path / "console.log").write_bytes(b"x")
    with pytest.raises(ValueError, match="count must be"):
        files.privileged_read_tail(str(tmp_path / "console.log"), count)


def test_a_missing_console_log_is_file_not_found(in_process, tmp_path):
    with pytest.raises(FileNotFoundError):
        files.privileged_read_tail(str(tmp_path / "console.log"), 10)


# -- luks_layout: two numbers of a LUKS1 header ----------------------------------

def test_the_layout_is_the_header_and_what_follows_it(in_process, tmp_path):
    path = _luks1(tmp_path / "volume", 4096, 10 << 20)
    assert files.privileged_luks_layout(path) == (4096 * 512, (10 << 20) - 4096 * 512)


def test_a_file_without_a_luks_header_gives_nothing(in_process, tmp_path):
    path = tmp_path / "passwd"
    path.write_text("root:x:0:0:root:/root:/bin/bash\n" * 10)
    with pytest.raises(ValueError, match="no LUKS header"):
        files.privileged_luks_layout(str(path))


def test_luks2_is_refused(in_process, tmp_path):
    path = tmp_path / "volume"
    _luks1(path, 4096, 10 << 20)
    with open(path, "r+b") as f:
        f.seek(6)
        f.write(struct.pack(">H", 2))
    with pytest.raises(ValueError, match="version 1 only"):
        files.privileged_luks_layout(str(path))


def test_a_header_claiming_more_than_the_file_is_refused(in_process, tmp_path):
    path = _luks1(tmp_path / "volume", 1 << 20, 1 << 20)
    with pytest.raises(ValueError, match="claims"):
        files.privileged_luks_layout(path)


def test_the_layout_of_a_directory_or_character_device_is_refused(in_process, tmp_path):
    for path in (str(tmp_path), "/dev/null"):
        with pytest.raises(ValueError, match="not a file or block device"):
            files.privileged_luks_layout(path)
    with pytest.raises(ValueError, match="absolute normal path"):
        files.privileged_luks_layout("volume")


# -- block_device_size: block devices under /dev only ----------------------------

def test_the_size_of_a_block_device(in_process):
    loop = "/dev/loop0"
    with open(loop, "rb") as f:
        expected = f.seek(0, os.SEEK_END)
    assert files.privileged_block_device_size(loop) == expected


def test_a_symlink_to_a_block_device_is_followed_under_dev_only(in_process, tmp_path):
    (tmp_path / "link").symlink_to("/dev/loop0")
    # The link is outside /dev, the device it names is not: the name counts
    # once resolved, as os-brick's /dev/disk/by-path links resolve.
    assert files.privileged_block_device_size(str(tmp_path / "link")) >= 0
    (tmp_path / "file").write_bytes(b"x" * 10)
    with pytest.raises(ValueError, match="not a device under /dev/"):
        files.privileged_block_device_size(str(tmp_path / "file"))


def test_a_character_device_is_not_a_block_device(in_process):
    with pytest.raises(ValueError, match="not a block device"):
        files.privileged_block_device_size("/dev/null")


# -- grow_file: a regular file, longer only ---------------------------------------

def test_a_file_is_grown_sparse_and_never_shrunk(in_process, tmp_path):
    path = tmp_path / "volume-1"
    path.write_bytes(b"data")
    assert files.privileged_grow_file(str(path), 1 << 30) == 1 << 30
    assert path.read_bytes()[:4] == b"data" and path.stat().st_blocks * 512 < 1 << 20
    assert files.privileged_grow_file(str(path), 10) == 1 << 30


def test_growing_a_non_file_is_refused(in_process, tmp_path):
    with pytest.raises(ValueError, match="not a regular file"):
        files.privileged_grow_file("/dev/null", 100)
    with pytest.raises(IsADirectoryError):
        files.privileged_grow_file(str(tmp_path), 100)


@pytest.mark.parametrize("size", [-1, 1.5, "100", None])
def test_a_size_that_is_no_byte_count_is_refused(in_process, tmp_path, size):
    path = tmp_path / "volume-1"
    path.write_bytes(b"x")
    with pytest.raises(ValueError, match="whole number of bytes"):
        files.privileged_grow_file(str(path), size)
    with pytest.raises(ValueError, match="absolute normal path"):
        files.privileged_grow_file("volume-1", 100)


# -- as_needed: the daemon only when this process is refused ---------------------

def test_the_daemon_is_asked_only_after_a_refusal(tmp_path):
    asked = []

    def refused(path):
        raise PermissionError(13, "Permission denied", path)

    def daemon(path):
        asked.append(path)
        return "from the daemon"

    assert files.as_needed(refused, daemon, "/p") == "from the daemon"
    assert files.as_needed(lambda p: "read here", daemon, "/q") == "read here"
    with pytest.raises(FileNotFoundError):
        files.as_needed(files.read_tail, daemon, str(tmp_path / "console.log"), 10)
    assert asked == ["/p"]

