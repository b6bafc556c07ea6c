"""The part of a console log a ``get_console_output`` call answers with.

The driver hands over the newest bytes of the log (at most 100 KiB); this
keeps the last lines the caller asked for and makes text of them. A "line"
is what lies between two ``\\n``, as Nova counts them: a log that ends with a
newline ends with an empty line, which tempest's line counts rely on.
"""


def tail_text(output: bytes, length) -> str:
    """:func:`tail` as text, what the compute answers with."""
    return to_text(tail(output, length))


def tail(output: bytes, length) -> bytes:
    """The last ``length`` lines of ``output``; all of it when ``length`` is None or -1."""
    if length is None or int(length) == -1:
        return output
    length = int(length)
    if length == 0:
        return b""
    return b"\n".join(output.split(b"\n")[-length:])


def to_text(output: bytes) -> str:
    """UTF-8 text; bytes that are not UTF-8 (line noise, a binary dump) become U+FFFD."""
    return output.decode("utf-8", "replace")
