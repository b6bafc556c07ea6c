"""A PostgreSQL instance of the cluster deployment's own.

The machine's PostgreSQL on 5432 is shared with other tests; the cluster's
database restart fault must not touch it, so the cluster runs its own
server (``initdb`` into the state dir) on another port and on the bridge
address only, trusting the deployment's private subnet.
"""

import glob
import os
import subprocess


def _bindir():
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"))
    if not found:
        raise RuntimeError("PostgreSQL's server programs are missing "
                           "(apt-get install postgresql)")
    return os.path.dirname(found[-1])


class PostgresServer:
    """``initdb`` once, then ``postgres`` in the foreground as user postgres."""

    def __init__(self, state_dir, address, port, subnet, max_connections=400,
                 name="postgresql"):
        self.name = name
        self.data_dir = os.path.join(state_dir, name)
        self.address = address
        self.port = port
        self.subnet = subnet
        self.max_connections = max_connections

    def url(self, database):
        return f"postgresql+psycopg2://postgres@{self.address}:{self.port}/{database}"

    def _as_postgres(self, argv):
        return ["setpriv", "--reuid=postgres", "--regid=postgres", "--init-groups", *argv]

    def configure(self):
        if os.path.exists(os.path.join(self.data_dir, "PG_VERSION")):
            return
        os.makedirs(self.data_dir, exist_ok=True)
        subprocess.run(["chown", "postgres:postgres", self.data_dir], check=True)
        subprocess.run(self._as_postgres([os.path.join(_bindir(), "initdb"), "-D",
                                          self.data_dir, "-U", "postgres", "--auth=trust",
                                          "-E", "UTF8"]),
                       check=True, capture_output=True, timeout=300, cwd="/")
        with open(os.path.join(self.data_dir, "pg_hba.conf"), "w") as f:
            f.write(f"local all all trust\nhost all all {self.subnet} trust\n")

    def argv(self):
        return self._as_postgres([
            os.path.join(_bindir(), "postgres"), "-D", self.data_dir, "-p", str(self.port),
            "-c", f"listen_addresses={self.address}",
            "-c", f"unix_socket_directories={self.data_dir}",
            "-c", f"max_connections={self.max_connections}",
            "-c", "fsync=off", "-c", "synchronous_commit=off"])

    def create_database(self, name, *, fresh=False):
        import sqlalchemy as sa

        engine = sa.create_engine(self.url("postgres"), isolation_level="AUTOCOMMIT")
        try:
            with engine.connect() as conn:
                if fresh:
                    conn.execute(sa.text(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)"))
                exists = conn.execute(sa.text("SELECT 1 FROM pg_database WHERE datname = :n"),
                                      {"n": name}).first()
                if not exists:
                    conn.execute(sa.text(f"CREATE DATABASE {name}"))
        finally:
            engine.dispose()
        return self.url(name)
