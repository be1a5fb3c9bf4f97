#!/bin/sh
# Installs the Debian packages llmbox needs, only those that are missing,
# and creates the unprivileged service user. Safe to run again.
set -eu

PKGS="build-essential pkg-config libfcgi-dev libcurl4-openssl-dev libcjson-dev
libarchive-dev libmagic-dev libsqlite3-dev libseccomp-dev libssl-dev
nginx-light debootstrap python3 zip unzip curl ca-certificates procps
iproute2 util-linux bubblewrap chromium slirp4netns libinih-dev libyaml-dev python3-yaml
wrk hyperfine clang valgrind python3-venv
ceph-mon ceph-osd radosgw ceph-common
nftables dnsmasq-base openssl"
# (linux-perf: bench/rollout.py --perf, where a rollout sample's CPU goes)
PKGS="$PKGS linux-perf"
# (openssl: the test CAs and certificates of tests/security/test_egress_secrets.py)
# (nftables: the rules of a sandbox whose network is a policy, server/sandboxd/sandbox_egress.c;
# dnsmasq-base: the test internet's DNS server of tests/security/test_egress.py)
# (clang: the libFuzzer targets and make check-asan; valgrind: tests/leaks;
# python3-venv: tests/integration/test_python_client.py installs the Python
# client with pip into a fresh venv; ceph-mon, ceph-osd, radosgw: the real
# S3 server of tests/integration/test_blobstore_s3.py, tests/lib/s3_server.py)
# the browser tests drive Debian's chromium from Node (playwright-core);
# a Node.js that is already installed (e.g. from NodeSource) is kept
command -v node >/dev/null 2>&1 || PKGS="$PKGS nodejs npm"
# Kubernetes (deploy/k8s): tests/integration/test_k8s.py renders the
# manifests with `kubectl kustomize`; Debian's kubectl (1.20) is installed
# only when there is none, since another kubectl package may own the path
command -v kubectl >/dev/null 2>&1 || PKGS="$PKGS kubernetes-client"
# several nodes, PostgreSQL as the store: libpq-dev to build (the client), and
# postgresql for the real server of tests/lib/pg_server.py
# (tests/integration/test_store_pg.py, bench/store.py)
PKGS="$PKGS libpq-dev postgresql"
# linux-perf: where the web's time per request goes (perf record of the web,
# syscall tracepoints; bench/RESULTS.md, "The API's exec: the web's own time")
PKGS="$PKGS linux-perf"
# several nodes, stateless webs: HAProxy in front of several webs
# (deploy/haproxy/llmbox.cfg, tests/integration/test_haproxy.py)
PKGS="$PKGS haproxy"
# images from registries: the Distribution registry, skopeo and umoci
# (tests/integration/test_registry.py, bench/registry_pull.py)
PKGS="$PKGS docker-registry skopeo umoci"

missing=""
for p in $PKGS; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing="$missing $p"
done
if [ -n "$missing" ]; then
    if [ "$(id -u)" != 0 ]; then
        echo "llmbox: missing packages:$missing (run as root to install them)" >&2
        exit 1
    fi
    echo "llmbox: installing:$missing"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    # policy-rc.d keeps the distribution's nginx service from starting on :80
    printf '#!/bin/sh\nexit 101\n' > /usr/sbin/policy-rc.d; chmod +x /usr/sbin/policy-rc.d
    apt-get install -y -qq --no-install-recommends $missing || { rm -f /usr/sbin/policy-rc.d; exit 1; }
    rm -f /usr/sbin/policy-rc.d
fi

if [ "$(id -u)" = 0 ] && ! getent passwd llmbox >/dev/null; then
    useradd --system --no-create-home --home-dir /nonexistent --shell /usr/sbin/nologin llmbox
    echo "llmbox: created system user llmbox (runs the web backend and agents)"
fi
exit 0
