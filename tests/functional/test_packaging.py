"""``pip install volumesvc`` installs the services, their etc/ files and nothing else.

The wheels and the sdist are built from a copy of the checkout with the
virtualenv's own setuptools (no network), as pip would build them for an
install. The all-in-one's wheel (aio/) is checked for what it needs at run
time outside the checkout.
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


def _build_wheel(project, out):
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation",
                    "--disable-pip-version-check", "-q", "-w", str(out), str(project)],
                   check=True, timeout=300)
    [path] = out.glob("*.whl")
    return zipfile.ZipFile(path)


def _dist_info(wheel, name):
    [path] = [n for n in wheel.namelist() if n.endswith(f".dist-info/{name}")]
    return wheel.read(path).decode()


@pytest.fixture(scope="module")
def wheel(source):
    return _build_wheel(source, source.parent / "wheel")


@pytest.fixture(scope="module")
def aio_wheel(source):
    return _build_wheel(source / "aio", source.parent / "aio-wheel")


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


def _requires(wheel):
    return [line for line in _dist_info(wheel, "METADATA").splitlines()
            if line.startswith("Requires-Dist:")]


def _scripts(wheel):
    entry_points = configparser.ConfigParser()
    entry_points.read_string(_dist_info(wheel, "entry_points.txt"))
    return dict(entry_points["console_scripts"])


def test_the_all_in_one_is_not_installed(wheel):
    scripts = _scripts(wheel)
    assert "volumesvc-api" in scripts
    assert [s for s in scripts if "aio" in s] == []
    requires = _requires(wheel)
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
    # What a build from the sdist installs with: bindep and pip constraints.
    assert {"bindep.txt", "upper-constraints.txt"} <= names
    assert [n for n in names if n.startswith("aio/")] == []


def test_the_all_in_one_wheel_carries_its_plugins_and_lists(aio_wheel):
    """Outside the checkout the harnesses read these next to their modules."""
    names = set(aio_wheel.namelist())
    here = REPO / "aio" / "volumesvc_aio"
    needed = {str(p.relative_to(here.parent)) for p in here.rglob("*")
              if p.suffix in (".py", ".txt", ".md") and "__pycache__" not in p.parts}
    assert "volumesvc_aio/plugins/volumesvc_cinder_plugins/file_driver.py" in needed
    assert "volumesvc_aio/tempest-include-list.txt" in needed
    assert needed <= names, needed - names
    tops = {n.split("/")[0] for n in names}
    assert {t for t in tops if not t.endswith(".dist-info")} == {"volumesvc_aio"}
    assert _scripts(aio_wheel) == {"volumesvc-aio": "volumesvc_aio.cmd:main"}
    requires = [r.split(":", 1)[1].strip() for r in _requires(aio_wheel)]
    assert "volumesvc" in requires
    assert any(r.startswith(("libvirt-python", "libvirt_python")) for r in requires)
    assert any(r.lower().startswith("pymysql") for r in requires)
