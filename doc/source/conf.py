"""Sphinx configuration of volumesvc's documentation (``tox -e docs``).

The configuration and policy references are generated from the installed
package's ``oslo.config.opts`` and ``oslo.policy.policies`` entry points, so
volumesvc must be installed in the environment that builds the docs
(``pip install -e .[doc]``).
"""

import os
import sys

# Local extensions (_ext/): the release-notes page.
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "_ext"))

project = "volumesvc"
copyright = "volumesvc contributors"
author = "volumesvc contributors"

extensions = [
    "oslo_config.sphinxext",
    "oslo_policy.sphinxext",
    "note_files",
]

templates_path: list[str] = []
exclude_patterns = ["_ext"]
source_suffix = {".rst": "restructuredtext"}
master_doc = "index"
language = "en"
pygments_style = "sphinx"

html_theme = "alabaster"
html_theme_options = {"description": "Nova-compatible compute for volume lifecycles"}
