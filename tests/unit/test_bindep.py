"""bindep.txt, the one list of system packages, and tools/dev.sh's reading of it.

dev.sh runs before any virtualenv exists, so it reads bindep's format itself
(``bindep_packages``); these tests run that shell function on small files
and on the real list.
"""

import os
import pathlib
import shutil
import subprocess

import pytest

from volumesvc_aio import ceph, guest_image, system

REPO = pathlib.Path(__file__).resolve().parents[2]
DEV_SH = REPO / "tools" / "dev.sh"


# A plain Debian has mawk as its awk, many machines gawk: the parser must
# read the same on both (whichever of them this machine has).
AWKS = [a for a in ("mawk", "gawk") if shutil.which(a)] or ["awk"]


def bindep_packages(path, platforms, profiles, awk="awk"):
    result = subprocess.run(
        ["bash", "-c", 'awk() { command "$AWK" "$@"; }; source "$1"; '
                       'bindep_packages "$2" "$3" "$4"', "-",
         str(DEV_SH), str(path), platforms, profiles],
        capture_output=True, text=True, check=True, timeout=30,
        env={"PATH": os.environ["PATH"], "AWK": awk})
    return result.stdout.split()


SAMPLE = """\
# comment line
plain
always-dpkg [platform:dpkg]   # trailing comment
rpm-only [platform:rpm]
not-on-debian [!platform:debian]
for-tests [platform:dpkg test]
for-aio [aio]
not-when-testing [!test]
versioned [platform:dpkg] >= 1.2

"""


@pytest.mark.parametrize("awk", AWKS)
@pytest.mark.parametrize("platforms, profiles, expected", [
    ("dpkg debian debian-12", "", ["plain", "always-dpkg", "not-when-testing", "versioned"]),
    ("dpkg debian debian-12", "test",
     ["plain", "always-dpkg", "for-tests", "versioned"]),
    ("dpkg debian debian-12", "test aio",
     ["plain", "always-dpkg", "for-tests", "for-aio", "versioned"]),
    ("rpm fedora", "aio", ["plain", "rpm-only", "not-on-debian", "for-aio", "not-when-testing"]),
])
def test_selectors(tmp_path, platforms, profiles, expected, awk):
    path = tmp_path / "bindep.txt"
    path.write_text(SAMPLE)
    assert bindep_packages(path, platforms, profiles, awk) == expected


def test_the_build_dependencies_are_always_listed():
    """pip compiles libvirt-python and uWSGI: a plain Debian 12 lacks these."""
    base = bindep_packages(REPO / "bindep.txt", "dpkg debian debian-12", "")
    assert {"python3-dev", "python3-venv", "gcc", "libc6-dev", "pkg-config",
            "libvirt-dev"} <= set(base)
    # The servers and the hypervisor are for the tests and the all-in-one only.
    assert "rabbitmq-server" not in base and "qemu-system-x86" not in base


def test_what_the_all_in_one_installs_is_in_the_list():
    """The harnesses' own apt installs name nothing bindep.txt leaves out."""
    listed = set(bindep_packages(REPO / "bindep.txt", "dpkg debian debian-12",
                                 "test aio cluster"))
    harness = {*system.LIBVIRT_PACKAGES, *system.RABBITMQ_PACKAGES, *ceph.PACKAGES, "haproxy",
               *guest_image.HOST_PACKAGES}
    assert sorted(harness - listed) == []
