"""The storm's Cinder poll survives a 500 that cinder-api gives one list under load.

Regression: an N=100 attach storm ended with a traceback when one volume
list answered 500 (cinder-api's own database pool), although every attach
went on.
"""

import pytest

from benchmarks.lib.storm_client import Client


class _Answers(Client):
    def __init__(self, answers):
        super().__init__("http://127.0.0.1:1/v2.1", "http://127.0.0.1:1/v3", 1)
        self.answers = list(answers)

    def cinder(self, method, path, body=None, timeout=None):
        return self.answers.pop(0)


def test_a_5xx_list_is_asked_again():
    ok = (200, {"volumes": [{"id": "v1", "status": "in-use"}]})
    client = _Answers([(500, {}), (503, {}), ok])
    assert client.volume_statuses(interval=0) == {"v1": "in-use"}


def test_a_4xx_or_lasting_5xx_still_fails():
    with pytest.raises(RuntimeError, match="HTTP 403"):
        _Answers([(403, {})]).volume_statuses(interval=0)
    with pytest.raises(RuntimeError, match="HTTP 500"):
        _Answers([(500, {})] * 3).volume_statuses(attempts=3, interval=0)
