"""One classification of failures, by exception type: real exceptions of each kind.

The database's own failures (refused, lost, pool exhausted, deadlock) are
produced against real servers in ``tests/functional/db/test_database_outage.py``.
"""

import http.server
import socket
import sys
import threading

import oslo_messaging as messaging
import pytest
import sqlalchemy
from keystoneauth1 import discover
from keystoneauth1 import exceptions as ks_exc
from keystoneauth1 import session as ks_session
from oslo_db import exception as db_exc

from volumesvc import context as vs_context
from volumesvc import exception, rpc
from volumesvc.common import outage
from volumesvc.conf import get_conf

Failure = outage.Failure


def _closed_port():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class _Answer(http.server.BaseHTTPRequestHandler):
    """Answers every GET with the status in its path (``/500``), a body that is no JSON."""

    def do_GET(self):  # noqa: N802 - http.server's name
        status = int(self.path.strip("/") or 200)
        body = b"<html>not a version document</html>"
        self.send_response(status)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


@pytest.fixture(scope="module")
def http_url():
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Answer)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_port}"
    server.shutdown()
    server.server_close()
    thread.join(timeout=5)


def _raised(function, *args, **kwargs):
    try:
        function(*args, **kwargs)
    except Exception as exc:  # noqa: BLE001 - the point is to look at it
        return exc
    raise AssertionError(f"{function} raised nothing")


# -- services behind us (keystoneauth) -------------------------------------------------------

def test_a_service_that_refuses_the_connection_is_down():
    session = ks_session.Session()
    exc = _raised(session.get, f"http://127.0.0.1:{_closed_port()}/", connect_retries=0,
                  timeout=5)
    assert isinstance(exc, ks_exc.ConnectFailure)
    assert outage.classify(exc) is Failure.SERVICE_DOWN


def test_a_service_answering_5xx_is_down_and_4xx_is_the_request(http_url):
    session = ks_session.Session()
    server_error = _raised(session.get, f"{http_url}/503", timeout=5)
    assert isinstance(server_error, ks_exc.HttpServerError)
    assert outage.classify(server_error) is Failure.SERVICE_DOWN
    refused = _raised(session.get, f"{http_url}/404", timeout=5)
    assert isinstance(refused, ks_exc.NotFound)
    assert outage.classify(refused) is Failure.REQUEST


def test_a_service_whose_version_document_cannot_be_read_is_down(http_url):
    exc = _raised(discover.get_version_data, ks_session.Session(), f"{http_url}/200")
    assert isinstance(exc, ks_exc.DiscoveryFailure)
    assert outage.classify(exc) is Failure.SERVICE_DOWN


def test_a_connect_timeout_is_a_service_down():
    # NOTE: a real one needs an address that drops SYNs; the class is what counts.
    assert outage.classify(ks_exc.ConnectTimeout("no answer")) is Failure.SERVICE_DOWN


# -- our own types -------------------------------------------------------------------------

@pytest.mark.parametrize("exc, kind", [
    (exception.CinderConnectionFailed(reason="refused"), Failure.SERVICE_DOWN),
    (exception.CinderAPIError(code=500, reason="Unable to update"), Failure.SERVICE_DOWN),
    (exception.CinderAPIError(code=400, reason="bad size"), Failure.REQUEST),
    (exception.InstanceNotFound(instance_id="i"), Failure.REQUEST),
    (exception.VolumeAlreadyAttached(volume_id="v", instance_uuids="i"), Failure.REQUEST),
    (exception.ComputeHostDown(host="h", instance_uuid="i"), Failure.REQUEST),
    (exception.OverQuota(), Failure.REQUEST),
    (exception.ConductorTimeout(action="attach", where="the server"), Failure.SERVICE_DOWN),
    (exception.DeviceDetachFailed(), Failure.FAILED),
    (exception.DatabaseUnavailable(), Failure.DATABASE_DOWN),
    (db_exc.DBDeadlock(), Failure.DATABASE_BUSY),
    (RuntimeError("bug"), Failure.BUG),
    (KeyError("device_name"), Failure.BUG),
])
def test_each_type_has_its_kind(exc, kind):
    assert outage.classify(exc) is kind
    assert (kind in outage.RETRYABLE) is (kind in {
        Failure.DATABASE_DOWN, Failure.DATABASE_BUSY, Failure.SERVICE_DOWN})


def test_the_database_under_an_adapters_error_is_still_the_database():
    try:
        try:
            raise sqlalchemy.exc.TimeoutError("QueuePool limit of size 5 overflow 10 reached")
        except sqlalchemy.exc.TimeoutError as inner:
            raise exception.CinderAPIError(code=500, reason="x") from inner
    except exception.CinderAPIError as outer:
        assert outage.classify(outer) is Failure.DATABASE_DOWN
        assert outage.database_down(outer)


def test_the_text_of_an_error_decides_nothing():
    """A message that names an outage is no outage; a bug that names none is a bug."""
    for message in ("DBConnectionError", "Remote error: DBConnectionError",
                    "server closed the connection unexpectedly",
                    "FATAL:  the database system is shutting down"):
        assert outage.classify(RuntimeError(message)) is Failure.BUG
        assert outage.classify(exception.Invalid(reason=message)) is Failure.REQUEST
        assert outage.classify(messaging.RemoteError("InstanceNotFound", message)) is Failure.BUG


def test_a_remote_error_is_classified_by_the_class_it_names():
    assert outage.classify(
        messaging.RemoteError("DBConnectionError", "x", "tb")) is Failure.DATABASE_DOWN
    assert outage.classify(messaging.RemoteError("DBDeadlock", "x", "tb")) is Failure.DATABASE_BUSY
    assert outage.classify(messaging.RemoteError("KeyError", "'x'", "tb")) is Failure.BUG


# -- across RPC ----------------------------------------------------------------------------

class _Conductor:
    """An endpoint whose database is gone."""

    target = messaging.Target(version="1.0")

    def bdm_list(self, ctxt):
        raise db_exc.DBConnectionError("(pymysql.err.OperationalError) (2003, refused)")

    def instance_get(self, ctxt):
        raise exception.InstanceNotFound(instance_id="i")


class _Compute:
    """An endpoint that asks the conductor and lets its failure go on to its caller."""

    target = messaging.Target(version="1.0")

    def __init__(self, conductor):
        self.conductor = conductor

    def reserve(self, ctxt):
        return self.conductor.call(ctxt, "bdm_list")


@pytest.fixture
def bus():
    conf = get_conf(args=[], default_config_files=[])
    conf.set_override("transport_url", "fake:/")
    transport = rpc.get_transport(conf)
    conductor_client = rpc.get_client(transport, "t-conductor", version="1.0", timeout=10)
    servers = [rpc.get_server(transport, "t-conductor", "h", [_Conductor()], version="1.0"),
               rpc.get_server(transport, "t-compute", "h", [_Compute(conductor_client)],
                              version="1.0")]
    for server in servers:
        server.start()
    yield transport
    for server in servers:
        server.stop()
        server.wait()
    transport.cleanup()


def test_an_rpc_server_sends_the_database_down_as_our_type(bus):
    ctxt = vs_context.RequestContext(overwrite=False)
    conductor = rpc.get_client(bus, "t-conductor", version="1.0", timeout=10)
    exc = _raised(conductor.call, ctxt, "bdm_list")
    assert isinstance(exc, exception.DatabaseUnavailable)
    assert outage.classify(exc) is Failure.DATABASE_DOWN
    # Relayed by a second server (a compute), it is still the same type.
    compute = rpc.get_client(bus, "t-compute", version="1.0", timeout=10)
    relayed = _raised(compute.call, ctxt, "reserve")
    assert isinstance(relayed, exception.DatabaseUnavailable)
    assert outage.database_down(relayed)
    # Anything else goes as it was raised.
    assert isinstance(_raised(conductor.call, ctxt, "instance_get"), exception.InstanceNotFound)


def test_the_database_down_crosses_the_wire_as_itself():
    """What oslo.messaging's real drivers do with the failure (fake:/ passes the object)."""
    from oslo_messaging._drivers import common as wire  # the drivers' own (de)serializer

    try:
        raise exception.DatabaseUnavailable()
    except exception.DatabaseUnavailable:
        data = wire.serialize_remote_exception(sys.exc_info())
    received = wire.deserialize_remote_exception(data, rpc.ALLOWED_EXMODS)
    assert isinstance(received, exception.DatabaseUnavailable)
    assert received.args[0] == exception.DatabaseUnavailable.MESSAGE
    # Relayed once more by a service that got it from another.
    try:
        raise received
    except exception.DatabaseUnavailable:
        again = wire.deserialize_remote_exception(
            wire.serialize_remote_exception(sys.exc_info()), rpc.ALLOWED_EXMODS)
    assert isinstance(again, exception.DatabaseUnavailable)


# -- Patience.record: the writes that say a server moved -----------------------

class _Clock:
    def __init__(self):
        self.now = 0.0

    def __call__(self):
        return self.now

    def sleep(self, seconds):
        self.now += seconds


def _refused(state):
    return exception.InvalidMigrationState(migration_id=1, instance_uuid="u", state=state,
                                           method="finish")


def _record(calls, wait=120, done=lambda: None):
    clock = _Clock()
    answers = iter(calls)

    def call():
        answer = next(answers)
        if isinstance(answer, BaseException):
            raise answer
        return answer
    return outage.Patience(wait, sleep=clock.sleep, clock=clock).record("x", call, done=done)


def test_a_record_is_asked_again_while_no_conductor_answers():
    lost = messaging.MessagingTimeout("no reply")
    assert _record([lost, lost, "recorded"]) == "recorded"


def test_a_record_whose_reply_was_lost_is_taken_as_done_when_the_records_say_so():
    refused = _refused("done")
    assert _record([messaging.MessagingTimeout("no reply"), refused],
                   done=lambda: {"status": "done"}) == {"status": "done"}


def test_a_refusal_stands_when_the_records_do_not_show_the_work():
    refused = _refused("error")
    with pytest.raises(exception.InvalidMigrationState):
        _record([messaging.MessagingTimeout("no reply"), refused], done=lambda: None)


def test_a_refusal_with_no_lost_reply_before_it_is_not_second_guessed():
    refused = _refused("done")
    asked = []
    with pytest.raises(exception.InvalidMigrationState):
        _record([refused], done=lambda: asked.append(1) or {"status": "done"})
    assert asked == []


def test_no_conductor_for_longer_than_the_wait_is_raised():
    lost = messaging.MessagingTimeout("no reply")
    with pytest.raises(messaging.MessagingTimeout):
        _record([lost] * 100, wait=20)
