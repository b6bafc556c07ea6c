"""The API served by real gunicorn (configured from [wsgi]) and real uwsgi.

What the systemd unit and doc/source/install/wsgi.rst run: gunicorn with
``--config python:volumesvc.serving.gunicorn_conf`` binds, forks and times out
as ``[wsgi]`` says (here through the options' deprecated ``[api]`` names);
uwsgi serves the module-level ``volumesvc.serving.wsgi_app:application``.
Both find the config through ``VOLUMESVC_CONFIG_FILE``.
"""

import http.client
import json
import os
import ssl
import subprocess
import sys
import textwrap
import time
import urllib.error
import urllib.request

import pytest

from tests.fixtures import database as db_fixtures
from tests.fixtures import process
from volumesvc.conf import get_conf
from volumesvc_aio import free_port, tls, wait_for

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__)))))
BIN = os.path.dirname(sys.executable)


@pytest.fixture
def api_config(tmp_path):
    """A config file for an API on a free loopback port, over a migrated SQLite file."""
    conf = get_conf(default_config_files=[])
    db_fixtures.sqlite_database(conf, str(tmp_path / "db")).dispose()
    port = free_port()
    path = tmp_path / "volumesvc.conf"
    path.write_text(textwrap.dedent(f"""\
        [DEFAULT]
        state_path = {tmp_path}
        transport_url = rabbit://guest:guest@127.0.0.1:9/
        [database]
        connection = {conf.database.connection}
        [api]
        auth_strategy = noauth2
        # The server's options under their pre-[wsgi] group: configuration
        # files written before the move still configure gunicorn.
        listen_host = 127.0.0.1
        listen_port = {port}
        workers = 2
        threads = 2
        worker_timeout = 45
        """))
    return path, port


@pytest.fixture
def run(tmp_path):
    procs = []

    def start(cmd, config_path):
        env = dict(os.environ, VOLUMESVC_CONFIG_FILE=str(config_path),
                   PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
        log = open(tmp_path / f"server-{len(procs)}.log", "w")
        proc = subprocess.Popen(cmd, env=env, cwd=str(tmp_path), stdout=log,
                                stderr=subprocess.STDOUT)
        procs.append((proc, log))
        return proc

    yield start
    for proc, log in procs:
        process.stop(proc)
        log.close()


def get(port, path, token=None):
    request = urllib.request.Request(f"http://127.0.0.1:{port}{path}")
    if token:
        request.add_header("X-Auth-Token", token)
    try:
        with urllib.request.urlopen(request, timeout=10) as resp:
            return resp.status, json.loads(resp.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read())


def wait_until_serving(proc, port, log_path):
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        assert proc.poll() is None, log_path.read_text()
        try:
            if get(port, "/")[0] == 200:
                return
        except OSError:
            pass
        time.sleep(0.3)
    raise AssertionError(f"not serving on {port}: {log_path.read_text()}")


def assert_serves_the_api(port):
    status, body = get(port, "/")
    assert status == 200 and "v2.1" in {v["id"] for v in body["versions"]}, body
    status, body = get(port, "/v2.1/flavors")
    assert status == 401, body
    status, body = get(port, "/v2.1/flavors", token="admin:p1")
    assert status == 200 and {"1", "42"} <= {f["id"] for f in body["flavors"]}, body


def _children(pid):
    out = subprocess.run(["ps", "-o", "pid=,args=", "--ppid", str(pid)],
                         capture_output=True, text=True).stdout
    return [line for line in out.splitlines() if line.strip()]


GUNICORN = [os.path.join(BIN, "gunicorn"), "--config", "python:volumesvc.serving.gunicorn_conf"]


def test_gunicorn_settings_are_the_wsgi_options(api_config, tmp_path):
    path, port = api_config
    env = dict(os.environ, VOLUMESVC_CONFIG_FILE=str(path),
               PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    printed = subprocess.run([*GUNICORN, "--print-config"], env=env, cwd=str(tmp_path),
                             capture_output=True, text=True, timeout=60)
    assert printed.returncode == 0, printed.stderr
    settings = {name.strip(): value.strip() for name, _, value in
                (line.partition("=") for line in printed.stdout.splitlines())}
    assert settings["bind"] == f"['127.0.0.1:{port}']"
    assert (settings["workers"], settings["threads"]) == ("2", "2")
    assert (settings["timeout"], settings["graceful_timeout"]) == ("45", "30")
    assert (settings["keepalive"], settings["max_requests"]) == ("75", "200")
    assert (settings["max_requests_jitter"], settings["preload_app"]) == ("50", "True")
    assert settings["wsgi_app"] == "volumesvc.serving.wsgi_app:application"
    assert "ThreadWorker" in settings["worker_class"]


def test_gunicorn_serves_the_api_with_the_unit_command(api_config, run):
    path, port = api_config
    proc = run(GUNICORN, path)
    wait_until_serving(proc, port, path.parent / "server-0.log")
    assert_serves_the_api(port)
    wait_for(lambda: len(_children(proc.pid)) == 2, 30, what="two workers")


def test_uwsgi_serves_the_module_level_application(api_config, run):
    path, port = api_config
    proc = run([os.path.join(BIN, "uwsgi"), "--http-socket", f"127.0.0.1:{port}",
                "--module", "volumesvc.serving.wsgi_app:application", "--master",
                "--processes", "2",
                "--threads", "2", "--need-app", "--die-on-term",
                "--disable-logging"], path)
    wait_until_serving(proc, port, path.parent / "server-0.log")
    assert_serves_the_api(port)
    assert len(_children(proc.pid)) == 2


def _tls_config(path, port, tmp_path, *, client_ca=False):
    """``path``'s API config plus [wsgi] TLS options; the CA that signed the certificates."""
    ca = tls.Authority(tmp_path)
    cert, key = ca.issue("api.volumesvc.test", ip="127.0.0.1")
    lines = f"[wsgi]\nssl_cert_file = {cert}\nssl_key_file = {key}\n"
    if client_ca:
        lines += f"ssl_ca_file = {ca.ca_file}\n"
    path.write_text(path.read_text() + lines)
    return ca


def _https_get(port, path, context, token=None):
    request = urllib.request.Request(f"https://127.0.0.1:{port}{path}")
    if token:
        request.add_header("X-Auth-Token", token)
    with urllib.request.urlopen(request, timeout=10, context=context) as resp:
        return resp.status, json.loads(resp.read())


def _wait_https(proc, port, context, log_path):
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        assert proc.poll() is None, log_path.read_text()
        try:
            return _https_get(port, "/", context)
        except (OSError, ssl.SSLError):
            time.sleep(0.3)
    raise AssertionError(f"not serving HTTPS on {port}: {log_path.read_text()}")


def test_gunicorn_serves_https_with_the_wsgi_certificate(api_config, run, tmp_path):
    path, port = api_config
    ca = _tls_config(path, port, tmp_path)
    proc = run(GUNICORN, path)
    trusting = ssl.create_default_context(cafile=ca.ca_file)
    status, body = _wait_https(proc, port, trusting, path.parent / "server-0.log")
    assert status == 200
    # The links say https: the request came over TLS.
    status, body = _https_get(port, "/v2.1/flavors", trusting, token="admin:p1")
    assert status == 200
    assert body["flavors"][0]["links"][0]["href"].startswith(f"https://127.0.0.1:{port}/")
    # A client that does not trust the CA refuses the server; plain HTTP gets no answer.
    with pytest.raises(urllib.error.URLError, match="CERTIFICATE_VERIFY_FAILED"):
        _https_get(port, "/", ssl.create_default_context())
    with pytest.raises((OSError, urllib.error.URLError, http.client.HTTPException)):
        get(port, "/")


def test_a_client_ca_makes_clients_show_a_certificate(api_config, run, tmp_path):
    path, port = api_config
    ca = _tls_config(path, port, tmp_path, client_ca=True)
    proc = run(GUNICORN, path)
    with_cert = ssl.create_default_context(cafile=ca.ca_file)
    with_cert.load_cert_chain(*ca.issue("client.volumesvc.test", client=True))
    status, _ = _wait_https(proc, port, with_cert, path.parent / "server-0.log")
    assert status == 200
    without = ssl.create_default_context(cafile=ca.ca_file)
    with pytest.raises((OSError, urllib.error.URLError, ssl.SSLError)):
        _https_get(port, "/", without)


@pytest.mark.parametrize("options", [
    {"ssl_cert_file": "/c.pem"}, {"ssl_key_file": "/k.pem"}, {"ssl_ca_file": "/ca.pem"}])
def test_half_a_tls_configuration_refuses_to_start(options):
    from volumesvc.serving import server

    conf = get_conf(args=[], default_config_files=[])
    for name, value in options.items():
        conf.set_override(name, value, group="wsgi")
    with pytest.raises(ValueError, match="must be set together"):
        server.gunicorn_settings(conf)


def _with_middleware(path, middleware, options=()):
    path.write_text(path.read_text() + f"[wsgi]\nmiddleware = {', '.join(middleware)}\n"
                    + "".join(f"middleware_options = {line}\n" for line in options))


def test_gunicorn_runs_an_operators_middleware_from_the_pipeline(api_config, run):
    path, port = api_config
    site = "tests.fixtures.site_middleware:filter_factory"
    _with_middleware(path, ["healthcheck", "request_id", "auth", site],
                     [f"{site} greeting=from the file", f"{site} unused=1"])
    proc = run(GUNICORN, path)
    wait_until_serving(proc, port, path.parent / "server-0.log")
    request = urllib.request.Request(f"http://127.0.0.1:{port}/v2.1/flavors",
                                     headers={"X-Auth-Token": "admin:p1"})
    with urllib.request.urlopen(request, timeout=10) as resp:
        assert resp.status == 200
        assert resp.headers["X-Site-Middleware"] == "seen"
        assert resp.headers["X-Site-Caller"] == "admin"
        assert resp.headers["X-Site-Config-File"] == str(path)
        assert resp.headers["X-Site-Greeting"] == "from the file"
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=10) as resp:
        assert "X-Site-Middleware" not in resp.headers


def test_gunicorn_refuses_to_start_with_an_unimportable_middleware(api_config, run):
    path, _port = api_config
    _with_middleware(path, ["request_id", "auth", "site_audit.missing:filter_factory"])
    proc = run(GUNICORN, path)
    assert proc.wait(timeout=60) != 0
    log = (path.parent / "server-0.log").read_text()
    assert "[wsgi] middleware: site_audit.missing:filter_factory: cannot import" in log, log
