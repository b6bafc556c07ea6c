"""The kill matrix's result table (reStructuredText) and its place in the contributor docs."""

BEGIN = ".. kill-matrix-results-begin"
END = ".. kill-matrix-results-end"


def _cell_text(text):
    return " ".join(str(text).split()).replace("|", "/")


def table(outcomes):
    """A list-table, one row per cell: workflow, process killed, step, converged, seconds."""
    lines = [".. list-table::", "   :header-rows: 1", "   :widths: 14 10 22 10 10 34", "",
             "   * - Workflow", "     - Killed", "     - Step (paused in)",
             "     - Converged", "     - Seconds", "     - Seen"]
    for outcome in outcomes:
        cell = outcome.cell
        lines += [f"   * - {cell.workflow}",
                  f"     - {cell.name.split('/')[1].split('@')[0]}",
                  f"     - ``{cell.point}``",
                  f"     - {'yes' if outcome.converged else '**no**'}",
                  f"     - {outcome.seconds:.1f}" if outcome.converged else "     - —",
                  f"     - {_cell_text(outcome.detail) or '—'}"]
    return "\n".join(lines) + "\n"


def write(path, table_text, *, commit, date, only=()):
    """Replace the block between the page's markers with ``table_text`` and its provenance."""
    with open(path) as f:
        page = f.read()
    head, rest = page.split(BEGIN + "\n", 1)
    _, tail = rest.split(END, 1)
    scope = f" (cells matching {', '.join(only)})" if only else ""
    block = (f"Run of ``{commit}`` on {date}{scope}:\n\n{table_text}\n")
    with open(path, "w") as f:
        f.write(head + BEGIN + "\n\n" + block + END + tail)
