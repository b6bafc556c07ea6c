"""``pip install volumesvc`` installs the services, their etc/ files and nothing else.

The wheel and the sdist are built from a copy of the checkout with the
virtualenv's own setuptools (no network), as pip would build them for an
install.
"""

import configparser
import pathlib
import shutil
import subprocess
import sys
import tarfile
import zipfile

import pytest

import volumesvc
from tests.fixtures import product_rules

REPO = pathlib.Path(volumesvc.__file__).parent.parent

# etc/ in the checkout -> where the wheel puts it, relative to the prefix.
ETC_FILES = {
    "etc/volumesvc/volumesvc.conf.sample": "etc/volumesvc/volumesvc.conf.sample",
    "etc/volumesvc/policy.yaml.sample": "etc/volumesvc/policy.yaml.sample",
    "etc/volumesvc/volumesvc-config-generator.conf":
        "etc/volumesvc/volumesvc-config-generator.conf",
    "etc/volumesvc/volumesvc-policy-generator.conf":
        "etc/volumesvc/volumesvc-policy-generator.conf",
    "etc/systemd/volumesvc-api.service": "share/volumesvc/systemd/volumesvc-api.service",
    "etc/systemd/volumesvc-compute.service": "share/volumesvc/systemd/volumesvc-compute.service",
    "etc/systemd/volumesvc-conductor.service":
        "share/volumesvc/systemd/volumesvc-conductor.service",
}


@pytest.fixture(scope="module")
def source(tmp_path_factory):
    """A copy of the checkout without build leftovers, virtualenvs or git."""
    copy = tmp_path_factory.mktemp("packaging") / "src"
    shutil.copytree(REPO, copy, ignore=shutil.ignore_patterns(
        ".git", ".venv", ".tox", "build", "dist", "*.egg-info", "__pycache__", "*.pyc",
        ".hypothesis", ".mypy_cache", ".ruff_cache", ".pytest_cache", "state", "*.sqlite"))
    return copy


@pytest.fixture(scope="module")
def wheel(source):
    out = source.parent / "wheel"
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation",
                    "--disable-pip-version-check", "-q", "-w", str(out), str(source)],
                   check=True, timeout=300)
    [path] = out.glob("volumesvc-*.whl")
    return zipfile.ZipFile(path)


@pytest.fixture(scope="module")
def sdist(source):
    out = source.parent / "sdist"
    subprocess.run([sys.executable, "-c",
                    "import sys; from setuptools import build_meta;"
                    " print(build_meta.build_sdist(sys.argv[1]))", str(out)],
                   cwd=source, check=True, timeout=300, stdout=subprocess.DEVNULL)
    [path] = out.glob("volumesvc-*.tar.gz")
    return tarfile.open(path)


def _data(wheel):
    """The wheel's data files, by their path under the install prefix."""
    prefix = next(n for n in wheel.namelist() if ".data/data/" in n).split("/data/")[0]
    return {n.removeprefix(prefix + "/data/"): n for n in wheel.namelist()
            if n.startswith(prefix + "/data/")}


def test_every_module_is_under_volumesvc(wheel):
    modules = [n for n in wheel.namelist() if n.endswith(".py")]
    assert "volumesvc/api/app.py" in modules
    assert [m for m in modules if not m.startswith("volumesvc/")] == []
    tops = {n.split("/")[0] for n in wheel.namelist()}
    assert {t for t in tops if not t.endswith((".dist-info", ".data"))} == {"volumesvc"}


def test_no_module_imports_another_service_or_installs_packages(wheel):
    offenders = {
        name: found for name in wheel.namelist() if name.endswith(".py")
        if (found := product_rules.violations(wheel.read(name).decode(), name))
    }
    assert offenders == {}


def test_the_all_in_one_is_not_installed(wheel):
    [entry_points] = [n for n in wheel.namelist() if n.endswith(".dist-info/entry_points.txt")]
    scripts = configparser.ConfigParser()
    scripts.read_string(wheel.read(entry_points).decode())
    assert "volumesvc-api" in scripts["console_scripts"]
    assert [s for s in scripts["console_scripts"] if "aio" in s] == []
    [metadata] = [n for n in wheel.namelist() if n.endswith(".dist-info/METADATA")]
    requires = [line for line in wheel.read(metadata).decode().splitlines()
                if line.startswith("Requires-Dist:")]
    assert any("oslo.service" in line or "oslo-service" in line for line in requires)
    assert [line for line in requires if "extra == \"aio\"" in line] == []


def test_the_wheel_ships_etc(wheel):
    data = _data(wheel)
    assert set(ETC_FILES.values()) <= set(data)
    for checkout, installed in ETC_FILES.items():
        assert wheel.read(data[installed]) == (REPO / checkout).read_bytes(), installed


def test_the_sdist_ships_etc_and_not_the_all_in_one(sdist):
    names = {n.split("/", 1)[1] for n in sdist.getnames() if "/" in n}
    assert set(ETC_FILES) <= names
    assert "volumesvc/db/migrations/script.py.mako" in names
    assert [n for n in names if n.startswith("aio/")] == []
