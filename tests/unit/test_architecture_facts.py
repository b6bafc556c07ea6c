"""The facts ``doc/source/contributor/architecture.rst`` states match the code.

The page names every table, every migration, volumesvc's own microversions
and every RPC method; each list is read back from the page here and compared
with what the code declares, so a change that forgets the page fails.
"""

import inspect
import pathlib
import re

from volumesvc.api import microversions as mv
from volumesvc.compute import rpcapi as compute_rpcapi
from volumesvc.conductor import rpcapi as conductor_rpcapi
from volumesvc.db import migration, models

PAGE = (pathlib.Path(__file__).resolve().parents[2]
        / "doc/source/contributor/architecture.rst").read_text()
LITERAL = re.compile(r"``([^`]+)``")


def _section(title):
    """The text under a ``===``-underlined title, up to the next title."""
    match = re.search(rf"^{re.escape(title)}\n=+\n(.*?)(?=^[^\n]+\n=+\n|\Z)", PAGE,
                      re.S | re.M)
    assert match, f"the architecture page has no section {title!r}"
    return match.group(1)


def _block(text, opening):
    """An indented block (a definition's body, a list) after the line ``opening``."""
    match = re.search(rf"^{re.escape(opening)}\n((?:(?:   |\* |  ).*\n|\n(?=   |\* ))+)",
                      text, re.M)
    assert match, f"the architecture page has no block after {opening!r}"
    return match.group(1)


def test_every_table_is_described():
    """Each term of the data model's definition list names tables; ``shadow_*`` all shadows."""
    text = _section("Data model and migrations")
    lines = text.splitlines()
    terms = [line for line, following in zip(lines, lines[1:], strict=False)
             if line.startswith("``") and following.startswith("   ")]
    named = {name for line in terms for name in LITERAL.findall(line)}
    tables = set(models.Base.metadata.tables)
    shadows = {t for t in tables if t.startswith(models.SHADOW_PREFIX)}
    assert "shadow_*" in named and shadows
    assert named - {"shadow_*"} == tables - shadows


def test_every_migration_is_listed_in_order():
    listed = re.findall(r"^\* ``([0-9a-f]{12})``", _block(
        _section("Data model and migrations"), "The revisions, oldest first:"), re.M)
    assert listed == migration.revisions()


def test_own_microversions_and_the_newest_are_named():
    text = " ".join(_section("API microversions").split())
    own = re.search(r"volumesvc's own versions \(``OWN_VERSIONS``\) are "
                    r"((?:2\.\d+(?:, | and )?)+)\.", text)
    assert own, "the sentence naming volumesvc's own versions is gone"
    named = re.findall(r"\b2\.\d+\b", own.group(1))
    assert named == [str(v) for v in mv.OWN_VERSIONS]
    nova = max(mv.parse(v) for v, *_ in mv.VERSIONS if mv.parse(v) not in mv.OWN_VERSIONS)
    assert f"Versions up to {nova} follow Nova" in text
    assert f"The newest is {mv.MAX_VERSION}." in text


def _methods(cls):
    return {name for name, _ in inspect.getmembers(cls, inspect.isfunction)
            if not name.startswith("_")}


def test_every_rpc_method_is_named():
    """Each interface's paragraph names exactly its client's methods."""
    text = _section("RPC interfaces and their versions")
    for opening, cls in (("Conductor (``volumesvc/conductor/rpcapi.py``)",
                          conductor_rpcapi.ConductorAPI),
                         ("Compute (``volumesvc/compute/rpcapi.py``)",
                          compute_rpcapi.ComputeAPI)):
        named = set(LITERAL.findall(_block(text, opening)))
        assert named == _methods(cls), (cls.__name__, named ^ _methods(cls))


def test_the_reader_finds_what_it_checks():
    """The page's own parsing, on a made-up page: a missing entry is seen."""
    page = "Head\n====\n\nCompute (x)\n   ``a``, ``b``.\n\nOther\n=====\nx\n"
    match = re.search(r"^Head\n=+\n(.*?)(?=^[^\n]+\n=+\n|\Z)", page, re.S | re.M)
    assert LITERAL.findall(_block(match.group(1), "Compute (x)")) == ["a", "b"]


def test_every_serving_module_is_named():
    """The API process's paragraph names each module of the serving package."""
    text = " ".join(_block(_section("Processes"), "``volumesvc-api``").split())
    package = pathlib.Path(__file__).resolve().parents[2] / "volumesvc/serving"
    modules = {p.name for p in package.glob("*.py") if p.name != "__init__.py"}
    named = {name for name in LITERAL.findall(text) if name.endswith(".py")}
    assert named == modules
