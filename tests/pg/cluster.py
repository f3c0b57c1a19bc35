"""A throwaway PostgreSQL cluster for tests: Debian's ``initdb`` / ``pg_ctl`` on a free
127.0.0.1 port, data directory and unix socket directory in a fresh temporary directory.

The binaries are found on ``PATH``, else under ``/usr/lib/postgresql/*/bin`` (Debian keeps them
off ``PATH``). PostgreSQL refuses to run as root, so when the tests run as root (CI here) the
cluster is made and run by the unprivileged ``postgres`` user the Debian package creates (or,
without it, by ``nobody``) through ``runuser``; its temporary directory is owned by that user.
As anyone else the cluster runs as the current user. Clients connect over TCP as the superuser
``pegboard`` with password authentication (``scram-sha-256``), so URLs in tests carry a
password the way a team's would (and messages are checked to mask it).
"""

from __future__ import annotations

import contextlib
import glob
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
import uuid
from dataclasses import dataclass
from pathlib import Path

import pytest

PACKAGE = "postgresql"
USER = "pegboard"
PASSWORD = "s3cret-test-pw"


def binaries() -> Path | None:
    """The folder holding initdb and pg_ctl, or None when PostgreSQL is not installed."""
    found = shutil.which("initdb")
    if found and shutil.which("pg_ctl"):
        return Path(found).parent
    for folder in sorted(glob.glob("/usr/lib/postgresql/*/bin"), reverse=True):
        if (Path(folder) / "initdb").exists() and (Path(folder) / "pg_ctl").exists():
            return Path(folder)
    return None


def require_binaries() -> Path:
    """The binaries' folder; skips the test without them (fails it when CI=true)."""
    folder = binaries()
    if folder is not None:
        return folder
    reason = f"PostgreSQL is not installed: install the Debian package {PACKAGE}"
    if os.environ.get("CI") == "true":
        pytest.fail(f"{reason} (.ci/run installs it)", pytrace=False)
    pytest.skip(reason)


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _run_as() -> pwd.struct_passwd | None:
    """The user the cluster runs as when we are root (None: run as ourselves)."""
    if os.geteuid() != 0:
        return None
    for name in ("postgres", "nobody"):
        with contextlib.suppress(KeyError):
            return pwd.getpwnam(name)
    raise RuntimeError("running as root and no 'postgres' or 'nobody' user to run PostgreSQL")


@dataclass
class Cluster:
    """A running cluster (see the module docstring)."""

    bindir: Path
    root: Path
    port: int
    owner: pwd.struct_passwd | None

    @property
    def data(self) -> Path:
        return self.root / "data"

    def url(self, database: str = "postgres", password: str = PASSWORD) -> str:
        return f"postgresql://{USER}:{password}@127.0.0.1:{self.port}/{database}"

    def _cmd(self, *args: str) -> list[str]:
        if self.owner is None:
            return list(args)
        return ["runuser", "-u", self.owner.pw_name, "--", *args]

    def _run(self, *args: str) -> None:
        done = subprocess.run(self._cmd(*args), capture_output=True, text=True, check=False)
        if done.returncode != 0:
            raise RuntimeError(f"{' '.join(args[:2])} failed: {done.stderr.strip()[-2000:]}")

    @classmethod
    def create(cls, bindir: Path) -> Cluster:
        owner = _run_as()
        root = Path(tempfile.mkdtemp(prefix="pegboard-pg-"))
        if owner is not None:
            os.chown(root, owner.pw_uid, owner.pw_gid)
        cluster = cls(bindir, root, _free_port(), owner)
        pwfile = root / "pw"
        pwfile.write_text(PASSWORD + "\n")
        if owner is not None:
            os.chown(pwfile, owner.pw_uid, owner.pw_gid)
        cluster._run(
            str(bindir / "initdb"),
            "-D",
            str(cluster.data),
            "-U",
            USER,
            f"--pwfile={pwfile}",
            "--auth-host=scram-sha-256",
            "--auth-local=trust",
            "--no-sync",
            "--encoding=UTF8",
            "--locale=C",
        )
        pwfile.unlink()
        cluster.start()
        return cluster

    def start(self) -> None:
        # Durability is off: a test cluster is thrown away (fsync costs seconds per suite).
        options = (
            f"-c listen_addresses=127.0.0.1 -c port={self.port} "
            f"-c unix_socket_directories={self.root} -c fsync=off "
            "-c synchronous_commit=off -c full_page_writes=off -c max_connections=200"
        )
        self._run(
            str(self.bindir / "pg_ctl"),
            "-D",
            str(self.data),
            "-l",
            str(self.root / "log"),
            "-o",
            options,
            "-w",
            "-t",
            "30",
            "start",
        )

    def stop(self, mode: str = "fast") -> None:
        self._run(str(self.bindir / "pg_ctl"), "-D", str(self.data), "-m", mode, "-w", "stop")

    def create_database(self) -> str:
        """A new empty database; its name."""
        import psycopg

        name = f"t_{uuid.uuid4().hex[:12]}"
        with psycopg.connect(self.url(), autocommit=True) as conn:
            conn.execute(f'CREATE DATABASE "{name}" TEMPLATE template0')
        return name

    def drop_database(self, name: str) -> None:
        """Drop a test's database; one that does not go within 5 s (a backend slow to end on
        a loaded machine) is left to the cluster's removal at the end of the session."""
        import psycopg

        with psycopg.connect(self.url(), autocommit=True) as conn:
            conn.execute("SET statement_timeout = '5s'")
            with contextlib.suppress(psycopg.errors.QueryCanceled):
                conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')

    def destroy(self) -> None:
        with contextlib.suppress(RuntimeError):
            self.stop("immediate")
        shutil.rmtree(self.root, ignore_errors=True)
