"""The report writer the storm scripts share: number formats and the results files.

Each run's Markdown block goes to ``benchmarks/results/<date>-<topic>.md``
(one file per day and script; a block with the same key, i.e. the same
shape of run, is replaced, any other appended), and the file is linked from
the index of ``benchmarks/README.md``. The README's summary of the latest
figures is written by hand from these files: a run on a busy machine must
not replace a figure by itself.
"""

import os
import re

from benchmarks.lib.storm_metrics import percentile

# benchmarks/, where the results and their README live.
HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RESULTS_DIR = os.path.join(HERE, "results")
README = os.path.join(HERE, "README.md")
INDEX_START = "<!-- results index -->"
INDEX_END = "<!-- /results index -->"


def add_arguments(parser):
    """``--results DIR`` and ``--no-results``, the same for every script that writes one."""
    parser.add_argument("--results", default=RESULTS_DIR, metavar="DIR",
                        help="directory of the dated result files (default: "
                             "benchmarks/results); the README's index links each new file")
    parser.add_argument("--no-results", action="store_true",
                        help="print the block only, write no file")


def num(value, digits=1):
    return "—" if value is None else f"{value:.{digits}f}"


def millis(value):
    return "—" if value is None else f"{value * 1000:.0f} ms"


def lat(values):
    """p50 / p99 in seconds, or ms when under a second."""
    p50, p99 = percentile(values, 50), percentile(values, 99)
    if p50 is None:
        return "—"
    if p99 < 1.0:
        return f"{p50 * 1000:.0f} ms / {p99 * 1000:.0f} ms"
    return f"{p50:.2f} s / {p99:.2f} s"


def goal(ok):
    return "**met**" if ok else "**missed**"


def put_block(current, mark, end, block):
    """``current`` with the block between ``mark`` and ``end`` replaced, or appended."""
    pattern = re.compile(re.escape(mark) + r".*?" + re.escape(end) + r"\n?", re.S)
    if pattern.search(current):
        return pattern.sub(lambda _: block, current)
    return current.rstrip("\n") + "\n\n" + block


def write_result(results_dir, *, date, topic, title, mark, end, text, readme=README):
    """Put ``text`` between ``mark`` and ``end`` in the day's ``topic`` file; return its path.

    ``date`` is the run's ISO date; ``title`` heads a new file. The README's
    index (between ``INDEX_START`` and ``INDEX_END``) gets a link to the file,
    newest first, unless the index has one (a link elsewhere in the README,
    e.g. in the summary, does not count) or the file lies outside the
    README's directory (a ``--results`` elsewhere, e.g. a test's).
    """
    os.makedirs(results_dir, exist_ok=True)
    name = f"{date[:10]}-{topic}.md"
    path = os.path.join(results_dir, name)
    current = f"# {title}, {date[:10]}\n"
    if os.path.exists(path):
        with open(path) as f:
            current = f.read()
    with open(path, "w") as f:
        f.write(put_block(current, mark, end, f"{mark}\n{text}\n{end}\n"))
    _link(readme, path, f"{date[:10]}: {title}")
    return path


def _link(readme, path, label):
    if not os.path.exists(readme):
        return
    with open(readme) as f:
        current = f.read()
    start, end = current.find(INDEX_START), current.find(INDEX_END)
    rel = os.path.relpath(path, os.path.dirname(os.path.abspath(readme)))
    if start < 0 or end < start or rel.startswith("..") or f"]({rel})" in current[start:end]:
        return
    at = start + len(INDEX_START) + 1  # newest first, right under the marker's line
    with open(readme, "w") as f:
        f.write(current[:at] + f"- [{label}]({rel})\n" + current[at:])
