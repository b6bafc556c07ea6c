"""The state vocabulary and the binary names are spelled in one module each.

The API writes the first task_state of an operation and the compute moves it
on with a compare-and-swap on the previous value; a conductor picks hosts by
the binary name the compute heartbeats with. A retyped literal that drifts
from its twin breaks those handshakes silently, so this test scans
``volumesvc/`` and refuses the literals outside their defining modules.

Some values are also ordinary words elsewhere ("active" is an image status,
"error" a volume status and a notification phase, "deleted" a column): those
are refused only where they are plainly a state (the value of a
``vm_state``/``task_state`` key or keyword, an ``expected`` task_state, a
comparison with a ``vm_state``/``task_state`` expression). All other values
are refused anywhere.
"""

import ast
import pathlib

import pytest

import volumesvc
from volumesvc import binaries
from volumesvc.states import task_states, vm_states

ROOT = pathlib.Path(volumesvc.__file__).parent

DEFINING = {"states/vm_states.py", "states/task_states.py", "binaries.py"}
# Files allowed to spell a state literal (none today; a test fails when an
# entry is no longer needed).
ALLOWED: set[str] = set()

BINARY_NAMES = frozenset({binaries.API, binaries.CONDUCTOR, binaries.COMPUTE})
STATES = vm_states.ALL | task_states.ALL
# State values that are also common words in other vocabularies ("deleting"
# is also a Cinder volume/snapshot status, reported by assisted snapshots).
AMBIGUOUS = frozenset({vm_states.ACTIVE, vm_states.ERROR, vm_states.DELETED,
                       vm_states.PAUSED, vm_states.SUSPENDED,
                       task_states.BLOCK_DEVICE_MAPPING, task_states.DELETING})
STATE_NAMES = ("vm_state", "task_state")
STATE_KEYWORDS = frozenset({"vm_state", "task_state", "vm_states", "task_states", "expected",
                            "expected_task_state", "expected_vm_state"})


def _constants(node):
    """String constants in ``node`` itself or, for a collection, its elements."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return [node]
    if isinstance(node, (ast.List, ast.Tuple, ast.Set)):
        return [c for elt in node.elts for c in _constants(elt)]
    if isinstance(node, ast.Call) and node.args:  # frozenset({...}), set([...])
        return _constants(node.args[0])
    if isinstance(node, ast.IfExp):
        return _constants(node.body) + _constants(node.orelse)
    return []


def _mentions_state(node):
    return any(name in ast.unparse(node) for name in STATE_NAMES)


def _state_contexts(tree):
    """String constants used as a vm_state/task_state value."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Dict):
            for key, value in zip(node.keys, node.values, strict=True):
                if isinstance(key, ast.Constant) and key.value in STATE_NAMES:
                    yield from _constants(value)
        elif isinstance(node, ast.Call):
            for kw in node.keywords:
                if kw.arg in STATE_KEYWORDS:
                    yield from _constants(kw.value)
        elif isinstance(node, ast.Compare):
            operands = [node.left, *node.comparators]
            if any(_mentions_state(op) for op in operands):
                for op in operands:
                    yield from _constants(op)
        elif isinstance(node, ast.Assign) and any(_mentions_state(t) for t in node.targets):
            yield from _constants(node.value)


def offences(source, filename="<source>"):
    """(line, literal) pairs of ``source`` that retype the shared vocabulary."""
    tree = ast.parse(source, filename)
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            if node.value in BINARY_NAMES or node.value in STATES - AMBIGUOUS:
                found.add((node.lineno, node.value))
        elif isinstance(node, ast.JoinedStr):  # f"volumesvc-compute:{host}"
            found.update((part.lineno, part.value) for part in node.values
                         if isinstance(part, ast.Constant)
                         and any(part.value.startswith(name) for name in BINARY_NAMES))
    for node in _state_contexts(tree):
        if node.value in STATES:
            found.add((node.lineno, node.value))
    return sorted(found)


def _scanned():
    for path in sorted(ROOT.rglob("*.py")):
        rel = str(path.relative_to(ROOT))
        if rel not in DEFINING:
            yield rel, path


def test_no_state_or_binary_literal_outside_its_module():
    found = {rel: hits for rel, path in _scanned() if rel not in ALLOWED
             if (hits := offences(path.read_text(), rel))}
    assert found == {}, "import volumesvc.states.vm_states/task_states or volumesvc.binaries"


def test_allowances_are_still_needed():
    for rel in ALLOWED:
        assert offences((ROOT / rel).read_text(), rel), f"{rel} is clean: drop it from ALLOWED"


def test_each_value_is_defined_once():
    assert vm_states.ALL.isdisjoint(task_states.ALL)
    assert binaries.COMPUTE == "volumesvc-compute"  # the service records' key


RETYPED = [
    'update(ctx, uuid, {"vm_state": "active", "task_state": None})',
    'update(ctx, uuid, {"task_state": "deleting"})',
    'save(db, ctx, uuid, values, expected_task_state=["spawning"])',
    'update(ctx, uuid, values, expected=["block_device_mapping"])',
    'if instance["vm_state"] == "error":\n    pass',
    'if instance.vm_state in ("paused", "suspended"):\n    pass',
    'notify(dict(instance, vm_state="deleted"))',
    'instance.vm_state = "active"',
    'step = "reboot_pending_hard" if hard else "reboot_pending"',
    'list_services(db, ctx, binary="volumesvc-compute")',
    'publisher = f"volumesvc-compute:{host}"',
]
OTHER_VOCABULARIES = [
    'if image["status"] == "active":\n    pass',
    'wait_for_status(cinder, ctx, vid, ("available", "error"))',
    'notify(ctx, instance, "volume_attach", "error")',
    'filters = {"deleted": False}',
    'mapping = {"block_device_mapping": []}',
    '"""The volumesvc-compute agent."""',
]


@pytest.mark.parametrize("source", RETYPED, ids=[f"retyped{i}" for i in range(len(RETYPED))])
def test_the_scan_catches_a_retyped_literal(source):
    assert offences(source)


@pytest.mark.parametrize("source", OTHER_VOCABULARIES,
                         ids=[f"other{i}" for i in range(len(OTHER_VOCABULARIES))])
def test_the_scan_leaves_other_vocabularies_alone(source):
    assert offences(source) == []
