#!/usr/bin/env python3
"""The local stack, docker-compose and Kubernetes must send every public path to the same
service. Run by `make deploy-check`:

    scripts/check-routing.py --compose .local/tools/compose/bin/docker-compose

1. Which upstream a path reaches is asked of nginx itself: it runs deploy/nginx/routes.conf
   with each upstream pointed at a stub that answers with the upstream's name.
2. Which service an upstream is, per environment: upstreams.local.conf and the ports
   scripts/stack.sh starts the services on; upstreams.container.conf and the services of
   `docker-compose config`; the same file and the Services and Deployments in deploy/k8s.
3. Every path below, and every operation of the OpenAPI document (tagged with the service
   that serves it), must reach its service in all three.

Exits 1 and names each disagreement.
"""

import argparse
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent
NGINX_DIR = ROOT / "deploy" / "nginx"
K8S_DIR = ROOT / "deploy" / "k8s"
UPSTREAMS = ["orbitcove_auth", "orbitcove_core", "orbitcove_notifications", "orbitcove_stream", "orbitcove_media",
             "orbitcove_reminders"]

# The gateway's routing as the walking-skeleton issue specifies it, with the edges that a
# sloppy prefix match would get wrong.
EXPECTED = [
    ("/api/v1/auth/apple", "auth"),
    ("/api/v1/auth", "auth"),
    ("/.well-known/jwks.json", "auth"),
    # The API's upload route is /api/v1/media/upload (the seed's name); the issue's
    # /api/v1/media/uploads reaches media as everything under /api/v1/media does.
    ("/api/v1/media/upload", "media"),
    ("/api/v1/media/uploads", "media"),
    ("/api/v1/media/files/uploads/x", "media"),
    ("/api/v1/media", "media"),
    ("/api/v1/me/notifications", "notifications"),
    ("/api/v1/me/notifications/n1/read", "notifications"),
    ("/api/v1/me/devices", "notifications"),
    ("/api/v1/me/devices/d1", "notifications"),
    ("/api/v1/me/stream", "notifications"),
    ("/api/v1/me/stream-tickets", "notifications"),
    ("/api/v1/me/streams", "core"),
    ("/api/v1/communities/c1/reminders", "reminders"),
    ("/api/v1/communities/c1/reminders/r1", "reminders"),
    ("/api/v1/me", "core"),
    ("/api/v1/me/communities", "core"),
    ("/api/v1/me/family-members", "core"),
    ("/api/v1/communities", "core"),
    ("/api/v1/communities/c1", "core"),
    ("/api/v1/communities/c1/events", "core"),
    ("/api/v1/communities/c1/posts", "core"),
    ("/api/v1/communities/c1/posts/p1", "core"),
    ("/api/v1/communities/c1/posts/p1/comments", "core"),
    ("/api/v1/communities/reminders", "core"),
    ("/api/v1/mediafiles", "core"),
    ("/api/v1/authors", "core"),
    ("/api/v1/openapi.yaml", "gateway"),
]

METHODS = {"get", "put", "post", "delete", "patch", "head", "options"}


class Problems(list):
    def add(self, message):
        self.append(message)
        print(f"FAIL {message}", file=sys.stderr)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def openapi_paths():
    """(sample path, service tag) for every operation in the OpenAPI document."""
    document = yaml.safe_load((ROOT / "deploy" / "openapi" / "openapi.yaml").read_text())
    samples = []
    for path, item in document["paths"].items():
        tags = {op.get("tags", [""])[0] for method, op in item.items() if method in METHODS}
        for tag in tags:
            samples.append((re.sub(r"\{[^}]+\}", "x1", path), tag))
    return samples


def parse_upstreams(path):
    """{upstream name: [server addresses]} from an nginx upstreams file."""
    text = re.sub(r"#.*", "", path.read_text())
    upstreams = {}
    for name, body in re.findall(r"upstream\s+(\S+)\s*\{([^}]*)\}", text):
        upstreams[name] = re.findall(r"^\s*server\s+([^\s;]+)", body, re.M)
    return upstreams


def gateway_upstream_for_paths(paths, problems):
    """Runs nginx with routes.conf and asks which upstream each path reaches."""
    nginx = shutil.which("nginx") or "/usr/sbin/nginx"
    work = Path(tempfile.mkdtemp(prefix="orbitcove-routing-"))
    gateway_port = free_port()
    stubs = {name: free_port() for name in UPSTREAMS}
    lines = ["user root;" if os.geteuid() == 0 else "", "daemon off;", f"pid {work}/nginx.pid;",
             f"error_log {work}/error.log warn;", "events { worker_connections 64; }", "http {",
             "access_log off;"]
    for kind in ("client_body", "proxy", "fastcgi", "uwsgi", "scgi"):
        lines.append(f"{kind}_temp_path {work}/{kind};")
    for name, port in stubs.items():
        lines.append(f"upstream {name} {{ server 127.0.0.1:{port}; }}")
        lines.append(f"server {{ listen 127.0.0.1:{port}; location / {{ return 200 'upstream={name}'; }} }}")
    lines += [f"server {{ listen 127.0.0.1:{gateway_port}; root {ROOT}/deploy/openapi;",
              f"include {NGINX_DIR}/routes.conf; }}", "}"]
    (work / "nginx.conf").write_text("\n".join(lines) + "\n")
    process = subprocess.Popen([nginx, "-p", str(work), "-c", str(work / "nginx.conf")])
    try:
        deadline = time.monotonic() + 10
        while True:
            try:
                socket.create_connection(("127.0.0.1", gateway_port), timeout=1).close()
                break
            except OSError:
                if process.poll() is not None or time.monotonic() > deadline:
                    sys.exit(f"nginx did not start: {(work / 'error.log').read_text()}")
                time.sleep(0.05)
        reached = {}
        for path in paths:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{gateway_port}{path}", timeout=5) as response:
                    body = response.read().decode()
            except urllib.error.HTTPError as error:
                problems.add(f"{path}: the gateway answered {error.code}")
                continue
            match = re.fullmatch(r"upstream=(\S+)", body)
            # Anything else came from nginx itself (the OpenAPI document).
            reached[path] = match.group(1) if match else "gateway"
        # nginx's own refusals are in the envelope too: a path that climbs above the root.
        climbing = "/api/v1/me/devices/" + "%2e%2e%2f" * 10
        try:
            urllib.request.urlopen(f"http://127.0.0.1:{gateway_port}{climbing}", timeout=5)
            problems.add(f"{climbing}: the gateway let it through")
        except urllib.error.HTTPError as error:
            body = error.read().decode(errors="replace")
            if error.code != 400 or '"code":"BAD_REQUEST"' not in body:
                problems.add(f"{climbing}: the gateway answered {error.code} {body[:80]!r}, not the 400 envelope")
        # As is what it refuses before routing: a URI or headers past its buffers (a hostile
        # probe got nginx's HTML pages).
        for what, request, status, code in [
            ("a 30 KB URI", urllib.request.Request(f"http://127.0.0.1:{gateway_port}/api/v1/me?" + "a" * 30_000),
             414, "URI_TOO_LONG"),
            ("a 40 KB header", urllib.request.Request(f"http://127.0.0.1:{gateway_port}/api/v1/me",
                                                      headers={"X-Big": "b" * 40_000}), 431, "HEADERS_TOO_LARGE"),
            ("an unknown method", urllib.request.Request(f"http://127.0.0.1:{gateway_port}/api/v1/me", method="FOO"),
             501, "NOT_IMPLEMENTED"),
            # nginx refuses TRACE itself: 405 in the envelope, as the document says (a 501 would
            # read as a server error to a client, and does to schemathesis).
            ("TRACE", urllib.request.Request(f"http://127.0.0.1:{gateway_port}/api/v1/me", method="TRACE"),
             405, "METHOD_NOT_ALLOWED"),
            # The document nginx serves itself names its methods on a 405 (a hostile probe's).
            ("POST to the document",
             urllib.request.Request(f"http://127.0.0.1:{gateway_port}/api/v1/openapi.yaml", data=b"x", method="POST"),
             405, "METHOD_NOT_ALLOWED"),
        ]:
            try:
                urllib.request.urlopen(request, timeout=5)
                problems.add(f"{what}: the gateway let it through")
            except urllib.error.HTTPError as error:
                body = error.read().decode(errors="replace")
                kind = error.headers.get("Content-Type", "")
                if error.code != status or f'"code":"{code}"' not in body or kind != "application/json":
                    problems.add(f"{what}: the gateway answered {error.code} {kind} {body[:80]!r}, "
                                 f"not the {status} envelope")
                allow = error.headers.get("Allow")
                if what == "POST to the document" and allow != "GET, HEAD":
                    problems.add(f"{what}: Allow is {allow!r}, not 'GET, HEAD'")
                if what == "TRACE" and allow is not None:
                    problems.add(f"{what}: Allow is {allow!r} on a service's path, which nginx cannot know")
        # A request line of another HTTP version gets 505 in the envelope, not nginx's HTML page
        # (a hostile probe's): written as bytes, since no client library sends one.
        reply = b""
        try:
            with socket.create_connection(("127.0.0.1", gateway_port), timeout=5) as connection:
                connection.sendall(b"GET /api/v1/me HTTP/2.0\r\nHost: x\r\nConnection: close\r\n\r\n")
                while chunk := connection.recv(65536):
                    reply += chunk
        except OSError as error:
            problems.add(f"HTTP/2.0 request line: {error} after {reply[:200]!r}")
        head, _, body = reply.partition(b"\r\n\r\n")
        if not head.startswith(b"HTTP/1.1 505") or b'"code":"HTTP_VERSION_NOT_SUPPORTED"' not in body \
                or b"content-type: application/json" not in head.lower():
            problems.add(f"HTTP/2.0 request line: the gateway answered {reply[:200]!r}, not the 505 envelope")
        # QUERY is a method the services know (they answer it 405 with the path's Allow): it
        # passes the gateway (schemathesis sends it).
        try:
            query = urllib.request.Request(f"http://127.0.0.1:{gateway_port}/api/v1/me", method="QUERY")
            with urllib.request.urlopen(query, timeout=5) as response:
                if not response.read().decode().startswith("upstream="):
                    problems.add("QUERY: answered by the gateway, not passed to the service")
        except urllib.error.HTTPError as error:
            problems.add(f"QUERY: the gateway answered {error.code} instead of passing it on")
        return reached
    finally:
        process.send_signal(signal.SIGQUIT)
        process.wait(timeout=10)
        shutil.rmtree(work, ignore_errors=True)


def local_services(problems):
    """{upstream: service} in the local stack: upstreams.local.conf and stack.sh's ports."""
    ports = dict(
        reversed(line.split())
        for line in subprocess.run([str(ROOT / "scripts" / "stack.sh"), "ports"], check=True,
                                   capture_output=True, text=True).stdout.splitlines())
    template = (NGINX_DIR / "nginx.local.conf.template").read_text()
    for include in ("@DEPLOY_DIR@/nginx/upstreams.local.conf", "@DEPLOY_DIR@/nginx/routes.conf"):
        if f"include {include};" not in template:
            problems.add(f"nginx.local.conf.template does not include {include}")
    services = {}
    for name, servers in parse_upstreams(NGINX_DIR / "upstreams.local.conf").items():
        for server in servers:
            host, _, port = server.rpartition(":")
            if host != "127.0.0.1" or port not in ports:
                problems.add(f"local: upstream {name} server {server} is no service of stack.sh")
            else:
                services.setdefault(name, set()).add(ports[port])
    return services


def container_gateway_problems(problems):
    """The gateway image (compose and Kubernetes) must ship routes.conf and the container upstreams."""
    dockerfile = (ROOT / "deploy" / "gateway.Dockerfile").read_text()
    conf = (NGINX_DIR / "nginx.container.conf").read_text()
    for needed in ("deploy/nginx/routes.conf", "deploy/nginx/upstreams.container.conf",
                   "deploy/nginx/nginx.container.conf /etc/nginx/nginx.conf"):
        if needed not in dockerfile:
            problems.add(f"gateway.Dockerfile does not copy {needed}")
    for include in ("/etc/orbitcove/nginx/upstreams.container.conf", "/etc/orbitcove/nginx/routes.conf"):
        if f"include {include};" not in conf:
            problems.add(f"nginx.container.conf does not include {include}")


def executable_service(command):
    """'auth' for a command starting /app/orbitcove-auth."""
    if isinstance(command, str):
        command = command.split()
    match = re.fullmatch(r"/app/orbitcove-([a-z]+)", command[0]) if command else None
    return match.group(1) if match else None


def compose_services(compose, problems):
    """{upstream: service} in docker-compose: upstreams.container.conf and the compose services."""
    environment = dict(os.environ)
    for variable in ("POSTGRES", "OWNER", "APP", "RABBITMQ"):
        environment[f"ORBITCOVE_{variable}_PASSWORD"] = "routing-check"
    environment["ORBITCOVE_MEDIA_SIGNING_KEY"] = "routing-check"
    rendered = subprocess.run([compose, "-f", str(ROOT / "docker-compose.yml"), "config"], check=True,
                              capture_output=True, text=True, env=environment, cwd=ROOT).stdout
    config = yaml.safe_load(rendered)["services"]
    gateway = config.get("gateway", {})
    if not str(gateway.get("build", {}).get("dockerfile", "")).endswith("deploy/gateway.Dockerfile"):
        problems.add("compose: the gateway is not built from deploy/gateway.Dockerfile")
    services = {}
    for name, servers in parse_upstreams(NGINX_DIR / "upstreams.container.conf").items():
        for server in servers:
            host, _, port = server.rpartition(":")
            service = config.get(host)
            if service is None:
                problems.add(f"compose: upstream {name} server {server}: no compose service {host}")
                continue
            if str(service.get("environment", {}).get("ORBITCOVE_HTTP_PORT")) != port:
                problems.add(f"compose: service {host} does not listen on {port}")
            if host not in gateway.get("depends_on", {}):
                problems.add(f"compose: the gateway does not depend on {host}")
            services.setdefault(name, set()).add(executable_service(service.get("command")))
    return services


def kubernetes_services(problems):
    """{upstream: service} in Kubernetes: upstreams.container.conf and deploy/k8s."""
    kustomization = yaml.safe_load((K8S_DIR / "kustomization.yaml").read_text())
    objects = []
    for resource in kustomization["resources"]:
        objects += [o for o in yaml.safe_load_all((K8S_DIR / resource).read_text()) if o]
    by_kind = {}
    for o in objects:
        by_kind.setdefault(o["kind"], {})[o["metadata"]["name"]] = o
    gateway = by_kind.get("Deployment", {}).get("gateway")
    if gateway is None or not gateway["spec"]["template"]["spec"]["containers"][0]["image"].startswith(
            "orbitcove-gateway"):
        problems.add("k8s: no gateway Deployment running the orbitcove-gateway image")
    services = {}
    for name, servers in parse_upstreams(NGINX_DIR / "upstreams.container.conf").items():
        for server in servers:
            host, _, port = server.rpartition(":")
            k8s_service = by_kind.get("Service", {}).get(host)
            if k8s_service is None:
                problems.add(f"k8s: upstream {name} server {server}: no Service {host}")
                continue
            matching = [p for p in k8s_service["spec"]["ports"] if str(p["port"]) == port]
            if not matching:
                problems.add(f"k8s: Service {host} has no port {port}")
                continue
            selector = k8s_service["spec"]["selector"]
            deployments = [d for d in by_kind.get("Deployment", {}).values()
                           if selector.items() <= d["spec"]["template"]["metadata"]["labels"].items()]
            if len(deployments) != 1:
                problems.add(f"k8s: Service {host} selects {len(deployments)} Deployments, not 1")
                continue
            container = deployments[0]["spec"]["template"]["spec"]["containers"][0]
            target = matching[0]["targetPort"]
            listening = {str(p["containerPort"]) for p in container.get("ports", [])
                         if target in (p.get("name"), p["containerPort"])}
            environment = {e["name"]: e.get("value") for e in container.get("env", [])}
            if listening != {port} or environment.get("ORBITCOVE_HTTP_PORT") != port:
                problems.add(f"k8s: Service {host}:{port} does not reach a container listening on {port}")
            services.setdefault(name, set()).add(executable_service(container.get("command")))
    return services


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--compose", required=True, help="the docker-compose 1.29 executable")
    arguments = parser.parse_args()

    problems = Problems()
    container_gateway_problems(problems)
    environments = {
        "local": local_services(problems),
        "compose": compose_services(arguments.compose, problems),
        "k8s": kubernetes_services(problems),
    }
    for environment, services in environments.items():
        if set(services) != set(UPSTREAMS):
            problems.add(f"{environment}: upstreams {sorted(services)}, expected {UPSTREAMS}")
        for upstream, names in services.items():
            if len(names) != 1:
                problems.add(f"{environment}: upstream {upstream} reaches several services {sorted(map(str, names))}")

    samples = EXPECTED + openapi_paths()
    reached = gateway_upstream_for_paths(sorted({path for path, _ in samples}), problems)
    for path, expected in samples:
        if path not in reached:
            continue
        upstream = reached[path]
        for environment, services in environments.items():
            actual = "gateway" if upstream == "gateway" else ",".join(sorted(map(str, services.get(upstream, {None}))))
            if actual != expected:
                problems.add(f"{environment}: {path} reaches {actual}, expected {expected}")

    if problems:
        print(f"{len(problems)} routing problem(s)", file=sys.stderr)
        return 1
    print(f"routing: {len(samples)} paths reach the same service in the local stack, compose and Kubernetes")
    return 0


if __name__ == "__main__":
    sys.exit(main())
