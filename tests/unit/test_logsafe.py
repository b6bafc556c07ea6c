"""logsafe: a client's control characters never reach a log line raw."""

import io
import logging

from volumesvc import logsafe


def test_escape():
    assert logsafe.escape("a\nb\rc\td\x1b[31m\x7f\x85\u2028") == \
        "a\\nb\\rc\\td\\x1b[31m\\x7f\\x85\\u2028"
    assert logsafe.escape("plain ünïcode") == "plain ünïcode"


def test_the_filter_escapes_arguments_and_message_of_every_record():
    stream = io.StringIO()
    logger = logging.getLogger("test_logsafe")
    logger.propagate = False
    handler = logging.StreamHandler(stream)
    logger.addHandler(handler)
    try:
        logsafe.install(logger)
        logsafe.install(logger)  # idempotent
        assert len(handler.filters) == 1
        logger.warning("GET %s failed", "/v2.1/x\n2026-01-01 ERROR forged")
        logger.warning("raw\rmessage")
    finally:
        logger.removeHandler(handler)
    lines = stream.getvalue().splitlines()
    assert lines == ["GET /v2.1/x\\n2026-01-01 ERROR forged failed", "raw\\rmessage"]
