"""``.. release-note-files::``: every reno note of ``releasenotes/notes``, by section.

Why not reno's own ``.. release-notes::``: it reads the notes out of git
history (tags, the commit that added each note), which fails or comes out
empty in a shallow clone, a tarball or before the notes are committed. This
reads the YAML files on disk, so the page builds wherever the tree is;
``reno lint`` still checks the notes themselves.
"""

import pathlib

import yaml
from docutils import nodes
from docutils.statemachine import StringList
from sphinx.util.docutils import SphinxDirective

# reno's default sections, in reno's order, with its titles.
SECTIONS = (
    ("prelude", "Prelude"),
    ("features", "New Features"),
    ("issues", "Known Issues"),
    ("upgrade", "Upgrade Notes"),
    ("deprecations", "Deprecation Notes"),
    ("critical", "Critical Issues"),
    ("security", "Security Issues"),
    ("fixes", "Bug Fixes"),
    ("other", "Other Notes"),
)


def _entries(value):
    return [value] if isinstance(value, str) else list(value or [])


class ReleaseNoteFiles(SphinxDirective):
    """Render the notes directory (path relative to the repository root)."""

    required_arguments = 1

    def run(self):
        root = pathlib.Path(self.env.srcdir).parent.parent
        notes_dir = root / self.arguments[0]
        notes = sorted(notes_dir.glob("*.yaml"))
        for path in notes:
            self.env.note_dependency(str(path))
        loaded = [(path, yaml.safe_load(path.read_text(encoding="utf-8")) or {})
                  for path in notes]
        lines = []
        for key, title in SECTIONS:
            items = [text for _, note in loaded for text in _entries(note.get(key))]
            if not items:
                continue
            lines += [title, "-" * len(title), ""]
            for text in items:
                body = text.strip().splitlines()
                lines.append("* " + body[0])
                lines += ["  " + line if line else "" for line in body[1:]]
                lines.append("")
        node = nodes.section()
        node.document = self.state.document
        self.state.nested_parse(StringList(lines, source=str(notes_dir)), 0, node,
                                match_titles=True)
        return node.children


def setup(app):
    app.add_directive("release-note-files", ReleaseNoteFiles)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
