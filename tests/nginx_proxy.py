"""Debian's nginx on loopback in front of kb-mcp replicas, as docs/team-mode.md's step 5
sets it up (TLS aside): round robin over the replicas, the original Host passed through,
the X-Forwarded-* headers set. Shared by the reverse-proxy tests and the many-clients
benchmark; ``start_proxy`` runs one foreground nginx process as this user."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import time
from collections.abc import Sequence
from pathlib import Path

__all__ = ["NGINX", "free_port", "start_proxy"]

NGINX = shutil.which("nginx") or next(
    (p for p in ("/usr/sbin/nginx", "/sbin/nginx") if os.path.exists(p)), None)

_CONF = """
worker_processes 1;
pid {tmp}/nginx.pid;
error_log {tmp}/error.log warn;
events {{ worker_connections 1024; }}
http {{
  log_format upstream '$upstream_addr $status';
  access_log {tmp}/access.log upstream;
  client_body_temp_path {tmp}/body;
  proxy_temp_path {tmp}/proxy;
  fastcgi_temp_path {tmp}/fastcgi;
  uwsgi_temp_path {tmp}/uwsgi;
  scgi_temp_path {tmp}/scgi;
  upstream kb_replicas {{
{servers}
  }}
  server {{
    listen 127.0.0.1:{port};
    location / {{
      proxy_pass http://kb_replicas;
      proxy_http_version 1.1;
      proxy_set_header Connection "";
      proxy_set_header Host $host;
      proxy_set_header X-Forwarded-Host $http_host;
      proxy_set_header X-Forwarded-For $proxy_add_x_forwarded_for;
      proxy_set_header X-Forwarded-Proto $scheme;
      proxy_buffering off;
      proxy_read_timeout 120s;
    }}
  }}
}}
"""


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def start_proxy(home: Path, upstreams: Sequence[int], deadline_s: float
                ) -> tuple[subprocess.Popen[bytes], int]:
    """nginx in the foreground with its files in ``home`` (created), round robin over the
    replicas on ``upstreams``: the process (the caller stops it) and the port it listens
    on, once it does. Raises ``AssertionError`` with nginx's log if it does not."""
    assert NGINX is not None, "nginx is not installed (apt-get install nginx-light)"
    home.mkdir(parents=True, exist_ok=True)
    port = free_port()
    servers = "\n".join(f"    server 127.0.0.1:{p};" for p in upstreams)
    conf = home / "nginx.conf"
    conf.write_text(_CONF.format(tmp=home, port=port, servers=servers), encoding="utf-8")
    log = home / "error.log"
    proc = subprocess.Popen(
        [NGINX, "-p", str(home), "-c", str(conf), "-e", str(log),
         "-g", "daemon off; master_process off;"],
        stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    end = time.monotonic() + deadline_s
    while time.monotonic() < end:
        if proc.poll() is not None:
            raise AssertionError(f"nginx exited {proc.returncode}: {log.read_text()}")
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return proc, port
        except OSError:
            time.sleep(0.05)
    proc.kill()
    proc.wait()
    raise AssertionError(f"nginx did not listen on {port}: {log.read_text()}")
