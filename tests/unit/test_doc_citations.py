"""Code, tests and benchmarks cite only documents that are in the repository.

A comment that sends a reader to a file outside the tree (the notes the
project was designed from, another checkout) is a dead end for a newcomer.
Citations name a path from the repository root (or from the citing file's
own directory), e.g. ``doc/source/contributor/contract.rst §3.2``; the
shorthand ``contract §N`` means that page too
(doc/source/contributor/house-rules.rst).
"""

import pathlib
import re

import pytest

import volumesvc

ROOT = pathlib.Path(volumesvc.__file__).resolve().parent.parent
SCANNED = ("volumesvc", "tests", "benchmarks", "aio")
SUFFIXES = {".py", ".yaml", ".yml", ".md", ".rst", ".txt", ".sh", ".ini", ".cfg", ".conf",
            ".toml", ".service"}
# A path-like word ending in .md or .rst (``../x/y.md``, ``doc/a.rst``, ``README.md``).
DOC_PATH = re.compile(r"(?<![\w/.-])((?:\.\.?/)*[\w][\w./-]*\.(?:md|rst))(?![\w-])")
# Names of the design notes that never were part of the tree.
OUTSIDE = re.compile(r"api-contract|shared/docs|style-anchors|performance-anchors"
                     r"|real-(?:cinder|glance|keystone|ceph)|(?<![\w/])libvirt\.md")
# In code, a section sign must come with the document it numbers, somewhere in
# the file (a document's own § refers to its own sections).
DOCUMENTS = {".md", ".rst"}
# Build output, and the packaging manifests whose package-data patterns name
# files relative to a package (``plugins/README.md``), not documents.
BUILT = {"__pycache__", "build", "dist"}
NOT_PROSE = {"pyproject.toml", "MANIFEST.in"}
NAMED_SECTION = re.compile(r"\.(?:md|rst)`{0,2}\)?,? §|contract §")


def _files():
    for top in SCANNED:
        base = ROOT / top
        if not base.is_dir():
            continue
        for path in sorted(base.rglob("*")):
            if (path.suffix in SUFFIXES and path.is_file() and path.name not in NOT_PROSE
                    and not any(part in BUILT or part.endswith(".egg-info")
                                for part in path.parts)):
                yield path


def _inside(candidate):
    try:
        candidate.resolve().relative_to(ROOT)
    except ValueError:
        return False
    return candidate.exists()


def dangling_citations(path, text):
    """The cited document paths of ``text`` that are not files of the repository."""
    missing = []
    for match in DOC_PATH.finditer(text):
        cited = match.group(1)
        if not any(_inside(base / cited) for base in (ROOT, path.parent)):
            missing.append(cited)
    missing += [m.group(0) for m in OUTSIDE.finditer(text)]
    if path.suffix not in DOCUMENTS and "§" in text and not NAMED_SECTION.search(text):
        missing.append("§ without the document it numbers")
    return missing


def test_every_cited_document_is_in_the_repository():
    this = pathlib.Path(__file__).resolve()
    offenders = {}
    for path in _files():
        if path.resolve() == this:
            continue
        found = dangling_citations(path, path.read_text(encoding="utf-8", errors="replace"))
        if found:
            offenders[str(path.relative_to(ROOT))] = sorted(set(found))
    assert offenders == {}


@pytest.mark.parametrize("text, missing", [
    ("# see api-contract §3.2", ["api-contract"]),
    ("# see ``docs/real-cinder.md``", ["docs/real-cinder.md", "real-cinder"]),
    ("# `../shared/docs/performance-anchors.md`",
     ["../shared/docs/performance-anchors.md", "shared/docs", "performance-anchors"]),
    ("# the NOTE of libvirt.md", ["libvirt.md", "libvirt.md"]),
    ("# doc/source/contributor/nowhere.rst §2", ["doc/source/contributor/nowhere.rst"]),
    ("# the gates of §2", ["§ without the document it numbers"]),
    ("# doc/source/contributor/contract.rst §2 and §3", []),
    ("# the contract §10 cleanup", []),
    ("# README.md and doc/source/admin/cpu-priority.rst", []),
])
def test_citation_check_tells_missing_from_present(text, missing):
    assert dangling_citations(ROOT / "volumesvc" / "x.py", text) == missing


def test_doc_requirements_match_the_doc_extra():
    """doc/requirements.txt (tox, CI) and pyproject's ``doc`` extra list the same packages."""
    import tomllib

    listed = [line.strip() for line in (ROOT / "doc" / "requirements.txt").read_text()
              .splitlines() if line.strip() and not line.startswith("#")]
    extra = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"][
        "optional-dependencies"]["doc"]
    assert sorted(listed) == sorted(extra)
