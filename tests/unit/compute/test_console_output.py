"""The compute's cut of a console log: the last lines, as text."""

import pytest

from volumesvc.compute import console_output

LOG = b"SeaBIOS\r\nBooting from Hard Disk...\r\nVSGUEST ready\r\n"


@pytest.mark.parametrize(("length", "expected"), [
    (None, LOG),
    (-1, LOG),
    ("-1", LOG),
    (0, b""),
    (1, b""),  # the empty line after the last newline, as Nova counts
    (2, b"VSGUEST ready\r\n"),
    ("3", b"Booting from Hard Disk...\r\nVSGUEST ready\r\n"),
    (100, LOG),
])
def test_tail(length, expected):
    assert console_output.tail(LOG, length) == expected


def test_tail_of_a_log_cut_mid_line_keeps_the_partial_first_line():
    assert console_output.tail(b"ing from disk\nready", None) == b"ing from disk\nready"
    assert console_output.tail(b"ing from disk\nready", 2) == b"ing from disk\nready"


def test_bytes_that_are_not_utf8_become_replacement_characters():
    text = console_output.tail_text(b"caf\xc3\xa9 \xff\xfe ok\n", None)
    assert text == "caf\u00e9 \ufffd\ufffd ok\n"
