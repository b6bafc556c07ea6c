"""The kill matrix's table: one row per cell, written between the page's markers only."""

from benchmarks.lib import kill_matrix_report
from tests.fixtures.killmatrix import Cell, Outcome
from volumesvc import binaries

PAGE = """Title
=====

Intro.

.. kill-matrix-results-begin

old table

.. kill-matrix-results-end

Afterword.
"""


def _outcomes():
    return [Outcome(Cell("attach-2.101", binaries.COMPUTE, "attach_volume"), True, 21.54),
            Outcome(Cell("swap", binaries.CONDUCTOR, "swap_volume"), False, None,
                    "still: ['volume v1 retyping | migrating']")]


def test_each_cell_is_a_row_with_its_outcome():
    text = kill_matrix_report.table(_outcomes())
    rows = text.split("   * - ")[2:]
    assert rows[0].split("\n     - ")[:5] == ["attach-2.101", "compute", "``attach_volume``",
                                               "yes", "21.5"]
    second = rows[1].split("\n     - ")
    assert second[:5] == ["swap", "conductor", "``swap_volume``", "**no**", "—"]
    # A '|' would end a table cell early in some renderers: what was seen keeps its words.
    assert second[5].strip() == "still: ['volume v1 retyping / migrating']"


def test_write_replaces_only_the_block_between_the_markers(tmp_path):
    page = tmp_path / "results-page"
    page.write_text(PAGE)
    kill_matrix_report.write(str(page), "THE TABLE\n", commit="abc1234", date="2026-12-05",
                             only=["attach"])
    text = page.read_text()
    assert "old table" not in text
    assert text.startswith("Title\n=====\n\nIntro.\n\n.. kill-matrix-results-begin\n\n")
    assert "Run of ``abc1234`` on 2026-12-05 (cells matching attach):\n\nTHE TABLE\n" in text
    assert text.endswith(".. kill-matrix-results-end\n\nAfterword.\n")
