"""A real MIT Kerberos KDC for the GSSAPI tests, and the broker's side of SASL GSSAPI for
:class:`~pyconsumer.testing.SaslProxy`.

:func:`ensure_kerberos` installs what is missing on a Debian machine (root: ``apt-get install
krb5-kdc krb5-admin-server krb5-user libkrb5-dev``, then ``pip install gssapi``, which builds
against libkrb5) and says why it cannot otherwise. :class:`Kdc` makes a realm in a temporary
folder (``kdb5_util``, ``kadmin.local``), writes keytabs, and runs ``krb5kdc`` in the
foreground on a free port; ``KRB5_CONFIG`` points this process at it (no DNS, no reverse
lookups: the service principal is ``kafka/<the host the client dials>``).
"""
from __future__ import annotations

import importlib
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from pyconsumer.testing import SaslServerRejected

REALM = "PYCONSUMER.TEST"
DEBIAN_PACKAGES = ["krb5-kdc", "krb5-admin-server", "krb5-user", "libkrb5-dev"]


def ensure_kerberos() -> str | None:
    """None when the KDC binaries and the gssapi package are there (installing them if
    needed and possible), else why not."""
    if shutil.which("krb5kdc") is None or shutil.which("kdb5_util") is None \
            or shutil.which("krb5-config") is None:
        if os.geteuid() != 0 or shutil.which("apt-get") is None:
            return "MIT Kerberos (krb5kdc) is not installed and this is not a root Debian machine"
        env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
        for cmd in (["apt-get", "update", "-q"],
                    ["apt-get", "install", "-y", "-q", "--no-install-recommends", *DEBIAN_PACKAGES]):
            proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=900)
            if proc.returncode != 0:
                return f"{' '.join(cmd)} failed: {proc.stderr[-500:]}"
    try:
        import gssapi  # noqa: F401
    except ImportError:
        proc = subprocess.run([sys.executable, "-m", "pip", "install", "-q", "gssapi"],
                              capture_output=True, text=True, timeout=900)
        if proc.returncode != 0:
            return f"pip install gssapi failed: {proc.stderr[-500:]}"
        importlib.invalidate_caches()           # installed while this process runs
        import gssapi  # noqa: F401,F811
    return None


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Kdc:
    """A realm with a KDC; ``add_principal`` and ``keytab`` make principals and keytabs."""

    def __init__(self) -> None:
        self.dir = Path(tempfile.mkdtemp(prefix="pyconsumer-kdc-"))
        self.port = _free_port()
        self.conf = self.dir / "krb5.conf"
        self.conf.write_text(f"""[libdefaults]
    default_realm = {REALM}
    dns_lookup_kdc = false
    dns_lookup_realm = false
    rdns = false
    dns_canonicalize_hostname = false
    udp_preference_limit = 1
    default_ccache_name = FILE:{self.dir}/ccache
[realms]
    {REALM} = {{
        kdc = 127.0.0.1:{self.port}
    }}
""")
        self.kdc_conf = self.dir / "kdc.conf"
        self.kdc_conf.write_text(f"""[kdcdefaults]
    kdc_ports = {self.port}
    kdc_tcp_ports = {self.port}
[realms]
    {REALM} = {{
        database_name = {self.dir}/principal
        key_stash_file = {self.dir}/stash
        acl_file = {self.dir}/kadm5.acl
        max_life = 1h
    }}
[logging]
    kdc = FILE:{self.dir}/kdc.log
""")
        self._saved = {k: os.environ.get(k) for k in ("KRB5_CONFIG", "KRB5_KDC_PROFILE", "KRB5CCNAME")}
        os.environ.update(KRB5_CONFIG=str(self.conf), KRB5_KDC_PROFILE=str(self.kdc_conf),
                          KRB5CCNAME=f"FILE:{self.dir}/ccache")
        self._run(["kdb5_util", "-r", REALM, "-P", "master-pw", "create", "-s"])
        self.proc = subprocess.Popen(["krb5kdc", "-n", "-r", REALM], stdout=subprocess.DEVNULL,
                                     stderr=subprocess.PIPE)
        deadline = time.monotonic() + 15
        while True:
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=1).close()
                break
            except OSError:
                if self.proc.poll() is not None or time.monotonic() > deadline:
                    err = self.proc.stderr.read().decode() if self.proc.stderr else ""
                    self.close()
                    raise RuntimeError(f"krb5kdc did not start on port {self.port}: {err[-500:]}") from None
                time.sleep(0.05)

    def _run(self, cmd: list[str]) -> str:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
        if proc.returncode != 0:
            raise RuntimeError(f"{' '.join(cmd)}: {proc.stderr[-500:]}")
        return proc.stdout

    def add_principal(self, name: str) -> str:
        self._run(["kadmin.local", "-r", REALM, "-q", f"addprinc -randkey {name}"])
        return f"{name}@{REALM}"

    def keytab(self, *names: str) -> str:
        """A keytab holding these principals' keys (a new key version: earlier keytabs of them
        stop working)."""
        path = self.dir / f"{names[0].replace('/', '_')}-{time.monotonic_ns()}.keytab"
        for name in names:
            self._run(["kadmin.local", "-r", REALM, "-q", f"ktadd -k {path} {name}"])
        return str(path)

    def close(self) -> None:
        if getattr(self, "proc", None) is not None and self.proc.poll() is None:
            self.proc.terminate()
            self.proc.wait(10)
        for k, v in self._saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
        shutil.rmtree(self.dir, ignore_errors=True)


class GssapiServer:
    """The broker's side of Kafka's SASL GSSAPI: accepts with the service keytab, offers no
    security layer, and lets in only ``allowed`` client principals."""

    def __init__(self, keytab: str, allowed: set[str]) -> None:
        import gssapi

        self._gssapi = gssapi
        creds = gssapi.Credentials(usage="accept", store={"keytab": keytab})
        self._ctx: Any = gssapi.SecurityContext(creds=creds, usage="accept")
        self._allowed = allowed
        self._offered = False
        self.username: str | None = None

    def step(self, client_token: bytes) -> tuple[bytes, bool]:
        gss = self._gssapi
        try:
            if not self._ctx.complete:
                out = self._ctx.step(client_token)
                return bytes(out or b""), False
            if not self._offered:
                self._offered = True        # the client's empty token: offer "no layer"
                return bytes(self._ctx.wrap(b"\x01\x00\x10\x00", False).message), False
            answer = self._ctx.unwrap(client_token).message
        except gss.exceptions.GSSError as e:
            raise SaslServerRejected(f"Authentication failed: GSSAPI: {e}") from None
        if len(answer) < 4 or not answer[0] & 1:
            raise SaslServerRejected("Authentication failed: GSSAPI: no acceptable security layer")
        user = str(self._ctx.initiator_name)
        if user not in self._allowed:
            raise SaslServerRejected(f"Authentication failed: principal {user} is not allowed")
        self.username = user
        return b"", True
