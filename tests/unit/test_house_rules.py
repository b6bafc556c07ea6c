"""House rules that keep the code base in the shape the style guide asks for."""

import ast
import importlib
import inspect
import pathlib
import re
import subprocess
import sys

import pytest

import volumesvc
from tests.fixtures import product_rules
from volumesvc.conductor.tasks import base as task_base

ROOT = pathlib.Path(volumesvc.__file__).parent


def _modules(*subdirs):
    for sub in subdirs:
        yield from sorted((ROOT / sub).rglob("*.py"))


def _imports(path):
    tree = ast.parse(path.read_text(), str(path))
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            yield node.module
            yield from (f"{node.module}.{alias.name}" for alias in node.names)


def test_compute_and_virt_never_import_the_database():
    """Computes hold no DB credentials: they go through the conductor."""
    offenders = [
        str(path.relative_to(ROOT)) for path in _modules("compute", "virt")
        if any(name == "volumesvc.db" or name.startswith("volumesvc.db.")
               or name.startswith("volumesvc.objects") for name in _imports(path))
    ]
    assert offenders == []



def test_only_the_compute_reaches_into_the_compute():
    """Other services and commands talk to a compute through its RPC client.

    ``volumesvc-manage volume_attachment`` and the conductor's tasks once
    imported the compute's reconciler for its report and Cinder views; what
    both sides need sits below them (``volume/reconciliation.py``). Only the
    compute's own process entry point builds its manager.
    """
    allowed = {"volumesvc.compute", "volumesvc.compute.rpcapi"}
    own_entry_point = ROOT / "cmd" / "compute.py"
    offenders = sorted(
        f"{path.relative_to(ROOT)}: {name}"
        for path in ROOT.rglob("*.py")
        if path != own_entry_point and (ROOT / "compute") not in path.parents
        for name in _imports(path)
        if name.startswith("volumesvc.compute.") and name not in allowed
        and not name.startswith("volumesvc.compute.rpcapi.")
    )
    assert offenders == []


def test_the_state_names_sit_below_the_services():
    """objects/ and quota.py spell states without importing a service package.

    Checked by importing the state modules in a fresh interpreter, so an
    indirect import (through a module they use) counts too.
    """
    modules = [f"volumesvc.states.{p.stem}" for p in _modules("states")
               if p.stem != "__init__"]
    assert {"volumesvc.states.vm_states", "volumesvc.states.task_states",
            "volumesvc.states.attach_states"} <= set(modules)
    script = (
        "import importlib, sys\n"
        f"sys.path.insert(0, {str(ROOT.parent)!r})\n"
        f"for name in {modules!r}: importlib.import_module(name)\n"
        "print('\\n'.join(sorted(sys.modules)))\n"
    )
    loaded = subprocess.run([sys.executable, "-c", script], check=True,
                            capture_output=True, text=True).stdout.split()
    services = ("volumesvc.compute", "volumesvc.conductor", "volumesvc.api")
    assert [name for name in loaded
            if any(name == s or name.startswith(s + ".") for s in services)] == []

def test_every_conductor_task_has_one_shape():
    """``Task(deps, context, *, <its request's fields>)`` on ``TaskBase``.

    Tasks once came in three shapes (some took the conductor's clients one
    by one, the reconcile task stood apart from the base class); one shape
    lets the manager build every task the same way.
    """
    offenders = []
    for path in _modules("conductor/tasks"):
        module = importlib.import_module(f"volumesvc.conductor.tasks.{path.stem}")
        for name, cls in vars(module).items():
            if not (inspect.isclass(cls) and cls.__module__ == module.__name__
                    and name.endswith("Task")):
                continue
            params = list(inspect.signature(cls.__init__).parameters.values())
            if not issubclass(cls, task_base.TaskBase):
                offenders.append(f"{name}: not a TaskBase")
            elif [p.name for p in params[:3]] != ["self", "deps", "context"] or any(
                    p.kind is not inspect.Parameter.KEYWORD_ONLY for p in params[3:]):
                offenders.append(f"{name}: {[p.name for p in params]}")
    assert offenders == []


def test_no_global_conf_in_api():
    pattern = re.compile(r"^\s*CONF\s*=\s*cfg\.CONF", re.M)
    offenders = [str(p.relative_to(ROOT)) for p in _modules("api", "serving")
                 if pattern.search(p.read_text())]
    assert offenders == []


def test_the_rest_api_knows_nothing_of_what_serves_it():
    """``serving/`` wraps ``api/``: the REST API never imports its server or middleware."""
    offenders = [
        str(path.relative_to(ROOT)) for path in _modules("api")
        if any(name == "volumesvc.serving" or name.startswith("volumesvc.serving.")
               for name in _imports(path))
    ]
    assert offenders == []


def test_options_are_declared_only_in_conf():
    pattern = re.compile(r"cfg\.(Str|Int|Bool|Float|List|Port|HostAddress|Dict|MultiStr)Opt\(")
    offenders = [
        str(p.relative_to(ROOT)) for p in ROOT.rglob("*.py")
        if "conf" not in p.relative_to(ROOT).parts[:1] and pattern.search(p.read_text())
    ]
    assert offenders == []


def test_modules_stay_small():
    """Review flag at 800 lines, ceiling 1,000 (doc/source/contributor/house-rules.rst)."""
    big = {str(p.relative_to(ROOT)): n for p in ROOT.rglob("*.py")
           if (n := len(p.read_text().splitlines())) > 1000}
    assert big == {}


def test_only_the_adapters_import_external_clients():
    allowed = {
        "cinderclient": {"volume/cinder.py"},
        "libvirt": {"virt/libvirt/host.py", "virt/libvirt/guest.py"},
        "os_brick": {"virt/libvirt/volume/brick.py", "conf/privsep.py"},
        "castellan": {"keymgr/__init__.py", "conf/key_manager.py"},
    }
    for lib, owners in allowed.items():
        users = {
            str(p.relative_to(ROOT)) for p in ROOT.rglob("*.py")
            if any(n == lib or n.startswith(lib + ".") for n in _imports(p))
        }
        assert users <= owners, (lib, users - owners)


def test_the_package_never_imports_test_code():
    """Test doubles and fixtures live under tests/; the product must not need them."""
    offenders = {
        str(p.relative_to(ROOT)) for p in ROOT.rglob("*.py")
        if any(n == "tests" or n.startswith("tests.") for n in _imports(p))
    }
    assert offenders == set()


def test_the_package_holds_only_the_product():
    """No module imports another service or the all-in-one, or installs packages.

    Those belong to the all-in-one (aio/, its own distribution); the wheel
    built from pyproject.toml is checked the same way in
    tests/functional/test_packaging.py.
    """
    offenders = {
        str(p.relative_to(ROOT)): found for p in ROOT.rglob("*.py")
        if (found := product_rules.violations(p.read_text(), str(p)))
    }
    assert offenders == {}


@pytest.mark.parametrize("source", [
    "import cinder.volume.driver",
    "from keystone.common import utils",
    "from glance.api import v2",
    "import tempest",
    "from volumesvc_aio import cinder",
    "import volumesvc_aio as harness",
    "import venv\nvenv.create('/tmp/v', with_pip=True)",
    "import ensurepip",
    "from pip._internal.cli.main import main",
    "subprocess.run([sys.executable, '-m', 'pip', 'install', 'cinder'])",
    "subprocess.run([python3, '-m', 'venv', path])",
    "os.system('pip3 install tempest')",
])
def test_the_product_rule_catches(source):
    assert product_rules.violations(source) != []


@pytest.mark.parametrize("source", [
    "from cinderclient import client",
    "from keystoneauth1 import session",
    "import keystonemiddleware.auth_token",
    "from volumesvc.volume import cinder",
    "reason = 'libvirt-python is not installed (pip install libvirt-python)'",
])
def test_the_product_rule_allows(source):
    assert product_rules.violations(source) == []


def test_the_all_in_one_would_break_the_product_rule():
    """What moved to aio/ is what the rule keeps out: its harness installs venvs."""
    import volumesvc_aio

    harness = pathlib.Path(volumesvc_aio.__file__)
    assert ROOT not in harness.parents
    assert product_rules.violations(harness.read_text()) != []


#: A test that patches a function of the ``time`` module itself (through any
#: module's name ``time``, ``mock.patch("time.sleep")``, ...), not a module's
#: own name for it: tests/fixtures/clock.py says why.
PROCESS_CLOCK_PATCH = re.compile(
    r"""(setattr|patch\.object)\(\s*(\w+\.)*time\s*,\s*["']\w+["']"""
    r"""|(setattr|patch)\(\s*["'](\w+\.)*time\.\w+["']""")


def test_no_test_patches_the_process_clock():
    tests_root = ROOT.parent / "tests"
    offenders = [
        f"{path.relative_to(tests_root)}:{number}"
        for path in sorted(tests_root.rglob("*.py"))
        for number, line in enumerate(path.read_text().splitlines(), 1)
        if PROCESS_CLOCK_PATCH.search(line)
        and path.name not in ("clock.py", "test_house_rules.py")]
    assert offenders == [], offenders


@pytest.mark.parametrize("source", [
    'monkeypatch.setattr(attach_storm.time, "sleep", lambda s: None)',
    'monkeypatch.setattr(time, "monotonic", clock)',
    'with mock.patch.object(cinder.time, "sleep"):',
    'mock.patch("time.sleep")',
    'monkeypatch.setattr("volumesvc.volume.cleanup.time.sleep", fake)',
])
def test_the_process_clock_rule_catches(source):
    assert PROCESS_CLOCK_PATCH.search(source)


def test_the_process_clock_rule_allows_a_modules_own_clock():
    assert not PROCESS_CLOCK_PATCH.search('monkeypatch.setattr(cleanup, "time", clock)')
