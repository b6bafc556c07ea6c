"""What the project declares it needs matches what it uses.

pyproject's dependencies are exactly the distributions the ``volumesvc``
package imports (a dependency nothing imports is dead weight every operator
installs; an import nothing declares works only by luck of what something
else pulled in), and the constraints file pins every one of them.
"""

import ast
import importlib.metadata
import pathlib
import re
import sys
import tomllib

import volumesvc
from volumesvc_aio import barbican, cinder, glance, keystone

ROOT = pathlib.Path(volumesvc.__file__).parent
REPO = ROOT.parent
PYPROJECT = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]

# Extras whose distributions the package imports when the feature is used
# (the compute's libvirt driver).
IMPORTED_EXTRAS = ("libvirt",)
# Extras that are database drivers: SQLAlchemy loads them by the connection
# URL's dialect, volumesvc never imports them.
DRIVER_EXTRAS = ("postgresql", "mysql")


def _canonical(name):
    return re.sub(r"[-_.]+", "-", name).lower()


def _requirement_name(requirement):
    return _canonical(re.split(r"[\s<>=!~;\[]", requirement.strip(), maxsplit=1)[0])


def _imported_top_levels(package_dir):
    """The top-level names ``import``ed anywhere under ``package_dir``."""
    names = set()
    for path in package_dir.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                names.update(alias.name.split(".")[0] for alias in node.names)
            elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                names.add(node.module.split(".")[0])
    return names


def _distributions_of(import_names, mapping):
    """Import name -> canonical distribution names, for third-party imports only."""
    found = {}
    for name in import_names:
        if name in sys.stdlib_module_names or name == "volumesvc":
            continue
        found[name] = {_canonical(d) for d in mapping.get(name, ())}
    return found


def _declared(*extras):
    reqs = list(PYPROJECT["dependencies"])
    for extra in extras:
        reqs += PYPROJECT["optional-dependencies"][extra]
    return {_requirement_name(r) for r in reqs}


def _used():
    return _distributions_of(_imported_top_levels(ROOT),
                             importlib.metadata.packages_distributions())


def test_every_import_is_declared():
    used = _used()
    declared = _declared(*IMPORTED_EXTRAS)
    undeclared = {name: sorted(dists) for name, dists in used.items()
                  if not dists & declared}
    assert undeclared == {}


def test_every_dependency_is_imported():
    used = set().union(*_used().values())
    unused = _declared(*IMPORTED_EXTRAS) - used
    assert unused == set()


def test_the_check_catches_an_unused_and_an_undeclared_distribution(tmp_path):
    """The comparison above sees a stray import and a declared-but-unused name."""
    (tmp_path / "mod.py").write_text("import flask\nfrom werkzeug import exceptions\nimport os\n")
    used = _distributions_of(_imported_top_levels(tmp_path),
                             {"flask": ["Flask"], "werkzeug": ["Werkzeug"]})
    assert used == {"flask": {"flask"}, "werkzeug": {"werkzeug"}}
    declared = {"flask", "cotyledon"}
    assert {n for n, d in used.items() if not d & declared} == {"werkzeug"}
    assert declared - set().union(*used.values()) == {"cotyledon"}


def _constraints(path):
    pins = {}
    for line in path.read_text().splitlines():
        line = line.split("#", 1)[0].strip()
        if line:
            name, sep, version = line.partition("==")
            assert sep and version, f"{path.name}: {line!r} is not name==version"
            pins[_canonical(name)] = version
    return pins


def test_the_constraints_pin_every_declared_dependency():
    pins = _constraints(REPO / "upper-constraints.txt")
    wanted = _declared(*PYPROJECT["optional-dependencies"])
    aio = tomllib.loads((REPO / "aio" / "pyproject.toml").read_text())["project"]
    wanted |= {_requirement_name(r) for r in aio["dependencies"]} - {"volumesvc"}
    assert sorted(wanted - set(pins)) == []
    assert "volumesvc" not in pins and "volumesvc-aio" not in pins


def test_the_all_in_one_services_are_fully_pinned():
    """The AIO's Keystone, Barbican, Cinder, Glance and tempest venvs pin exact versions."""
    here = REPO / "aio" / "volumesvc_aio"
    for service in ("keystone", "barbican", "cinder", "glance", "tempest"):
        pins = _constraints(here / f"{service}-constraints.txt")
        assert service in pins, service
    # The harnesses install exactly those lists, of the version they announce.
    for module, version in ((barbican, barbican.BARBICAN_VERSION),
                            (cinder, cinder.CINDER_VERSION), (glance, glance.GLANCE_VERSION),
                            (keystone, keystone.KEYSTONE_VERSION)):
        name = module.__name__.rsplit(".", 1)[1]
        assert f"{name}=={version}" in module.REQUIREMENTS
        assert all("==" in r for r in module.REQUIREMENTS), name
