#!/bin/bash
# A cluster on one machine (several nodes; docs/OPERATIONS.md "A cluster on one
# machine"): PostgreSQL, Ceph's radosgw, HAProxy, two webs (w1, w2) and
# three sandbox nodes (n1, n2, n3), each web and node in its own network
# namespace on a private bridge, with its own LLMBOX_HOME. Every member
# reaches PostgreSQL and radosgw over TCP on the bridge, so cutting its
# link cuts it off.
#
#   scripts/cluster.sh up | down | status | kill-node NAME | kill-web NAME
#   scripts/cluster.sh cut NAME | heal NAME | partition NAME SECONDS
#   scripts/cluster.sh run     (make cluster: up, wait, Ctrl-C = down)
#
# Runs as root (sandboxd, namespaces). Environment:
#   LLMBOX_CLUSTER_DIR   state folder (default /tmp/llmbox-cluster)
#   LLMBOX_CLUSTER_REGISTRY_PORT  the image registry's port on the bridge
#                        address (5050: Debian's own docker-registry service
#                        listens on every address's 5000); its blobs are in
#                        radosgw's bucket
#                        llmbox-registry
#   LLMBOX_CLUSTER_NET   the first three octets of the bridge's /24 (10.213.0)
#   LLMBOX_CLUSTER_PORT  HAProxy's port on 127.0.0.1 (8480)
#   LLMBOX_CLUSTER_LEASE node_lease_s of the nodes (15)
#   LLMBOX_LLM_*         the model, as for `make run`; the nodes reach the
#                        host at $NET.1 (the bridge), not at 127.0.0.1
set -uo pipefail
cd "$(dirname "$0")/.."
REPO="$PWD"
DIR="${LLMBOX_CLUSTER_DIR:-/tmp/llmbox-cluster}"
NET="${LLMBOX_CLUSTER_NET:-10.213.0}"
PORT="${LLMBOX_CLUSTER_PORT:-8480}"
LEASE="${LLMBOX_CLUSTER_LEASE:-15}"
REG_PORT="${LLMBOX_CLUSTER_REGISTRY_PORT:-5050}"
REG_BUCKET=llmbox-registry
BR=lbxc-br0
HOST_IP="$NET.1"
WEBS="w1 w2"
NODES="n1 n2 n3"
# the last octet of each member's address
declare -A OCTET=([w1]=11 [w2]=12 [n1]=21 [n2]=22 [n3]=23)

say() { echo "cluster: $*"; }
fail() { echo "cluster: FAILED: $*" >&2; }
ns() { echo "lbxc-$1"; }
addr() { echo "$NET.${OCTET[$1]}"; }

need_root() {
    if [ "$(id -u)" != 0 ]; then
        fail "needs root (network namespaces, sandboxd)"
        exit 1
    fi
}

# Starts "$@" in member $1's network namespace, in a session of its own,
# with the other members' homes hidden (a tmpfs over each, in a mount
# namespace of its own whose mounts do not reach the host). Its pid is kept
# in pids/$1.$2; its output goes to $DIR/$1/var/log/$2.out.
start_in() {
    local m="$1" what="$2"
    shift 2
    local hide=""
    for o in $WEBS $NODES; do
        [ "$o" = "$m" ] || hide="$hide $DIR/$o"
    done
    # nsenter, not `ip netns exec`: that one mounts a new /sys, without the
    # cgroup hierarchies under it, and sandboxd would fall back to rlimits
    HIDE="$hide" setsid nsenter --net="/run/netns/$(ns "$m")" unshare --mount --propagation slave sh -c '
        for d in $HIDE; do mount -t tmpfs -o size=4k,mode=0 none "$d" || exit 1; done
        exec "$@"' sh "$@" </dev/null >>"$DIR/$m/var/log/$what.out" 2>&1 &
    echo $! > "$DIR/pids/$m.$what"
}

# the pids in member $1's network namespace (by the namespace's inode: an
# agent or nginx worker of a killed node has no pid file)
netns_pids() {
    # iproute2 compares each process's namespace with it: one process, not
    # a stat per pid (seconds on a loaded machine, which delays a kill)
    [ -e "/run/netns/$(ns "$1")" ] || return 0
    ip netns pids "$(ns "$1")" 2>/dev/null
}

alive() { [ -f "$1" ] && kill -0 "$(cat "$1")" 2>/dev/null; }

# ---- up ---------------------------------------------------------------------
net_up() {
    say "bridge $BR $HOST_IP/24 (no forwarding, no route out)"
    ip link add "$BR" type bridge || return 1
    ip addr add "$HOST_IP/24" dev "$BR" || return 1
    ip link set "$BR" up || return 1
    for m in $WEBS $NODES; do
        say "namespace $(ns "$m") $(addr "$m")"
        ip netns add "$(ns "$m")" || return 1
        ip link add "lbxc-$m" type veth peer name eth0 netns "$(ns "$m")" || return 1
        ip link set "lbxc-$m" master "$BR" up || return 1
        ip -n "$(ns "$m")" addr add "$(addr "$m")/24" dev eth0 || return 1
        ip -n "$(ns "$m")" link set eth0 up || return 1
        ip -n "$(ns "$m")" link set lo up || return 1
    done
}

# waits until file $1 has a line starting with $2; prints that line's value
wait_line() {
    local f="$1" key="$2" pidf="$3" i
    for i in $(seq 1200); do
        if grep -q "^$key=" "$f" 2>/dev/null; then
            grep "^$key=" "$f" | head -n1 | cut -d= -f2-
            return 0
        fi
        alive "$pidf" || return 1
        sleep 0.1
    done
    return 1
}

infra_up() {
    mkdir -p "$DIR/infra/tmp" && chmod 0755 "$DIR/infra" "$DIR/infra/tmp"
    say "PostgreSQL (tests/lib/pg_server.py: initdb) on $HOST_IP over TCP, with a password"
    TMPDIR="$DIR/infra/tmp" setsid python3 tests/lib/pg_server.py "$HOST_IP" >"$DIR/infra/pg.out" 2>&1 </dev/null &
    echo $! > "$DIR/pids/infra.pg"
    say "Ceph radosgw (tests/lib/s3_server.py) on $HOST_IP"
    TMPDIR="$DIR/infra/tmp" setsid python3 tests/lib/s3_server.py "$HOST_IP" >"$DIR/infra/s3.out" 2>&1 </dev/null &
    echo $! > "$DIR/pids/infra.s3"
    local db
    if ! db=$(wait_line "$DIR/infra/pg.out" LLMBOX_DB_URL "$DIR/pids/infra.pg"); then
        fail "PostgreSQL did not start: $(tail -n 5 "$DIR/infra/pg.out")"
        return 1
    fi
    if ! wait_line "$DIR/infra/s3.out" LLMBOX_S3_RETRIES "$DIR/pids/infra.s3" >/dev/null; then
        fail "radosgw did not start: $(tail -n 5 "$DIR/infra/s3.out")"
        return 1
    fi
    # the sandbox API on every web, one token (0600 in $DIR/sandbox_token)
    local sbx
    sbx=$(od -An -N32 -tx1 /dev/urandom | tr -d ' \n')
    [ ${#sbx} = 64 ] || { fail "no random sandbox API token from /dev/urandom"; return 1; }
    (umask 077; echo "$sbx" > "$DIR/sandbox_token")
    {
        echo "LLMBOX_DB_URL=$db"
        echo "LLMBOX_SANDBOX_API_TOKEN=$sbx"
        # several nodes's 1,000 API sandboxes at once are ~340 a node: room for
        # them (each holds a sandboxd connection of its web)
        echo "LLMBOX_SANDBOX_API_MAX=1024"
        echo "LLMBOX_SANDBOXD_MAX_CONNS=1536"
        grep '^LLMBOX_S3_' "$DIR/infra/s3.out" | grep -v '^LLMBOX_S3_BUCKET='
        echo "LLMBOX_S3_BUCKET=llmbox-cluster"
        echo "LLMBOX_TASK_RUNNER=queue"
        echo "LLMBOX_PLUGINS=$REPO/plugins"
        echo "LLMBOX_PROMPTS=$REPO/server/agent/prompts"
        echo "LLMBOX_IMAGES=$REPO/images"
        # the image store is each member's own (member_env), as on hosts
        # of their own: a node pulls a registry's image on first use
        echo "LLMBOX_INSECURE_REGISTRIES=$HOST_IP:$REG_PORT"
        echo "LLMBOX_WEB_USER=llmbox"
        echo "LLMBOX_NODE_LEASE_S=$LEASE"
        # the model: as make run has it (environment, else the repository's llmbox.conf)
        for k in url model key; do
            local K v
            K="LLMBOX_LLM_${k^^}"
            v="${!K:-}"
            [ -n "$v" ] || v=$(LLMBOX_HOME="$REPO" build/llmbox config "llm_$k" 2>/dev/null) || v=""
            [ -n "$v" ] && echo "$K=$v"
        done
    } > "$DIR/cluster.env"
    chmod 0600 "$DIR/cluster.env"
    say "bucket llmbox-cluster"
    if ! out=$(env $(cat "$DIR/cluster.env") LLMBOX_HOME=/ build/llmbox blob mkbucket 2>&1); then
        fail "creating the bucket: $out"
        return 1
    fi
    registry_up
}

# The image registry (Debian's docker-registry, the Distribution registry)
# on the bridge address, plain HTTP (the nodes list it in
# insecure_registries), its blobs in radosgw through the registry's S3
# storage driver: a bucket of its own, the cluster's credentials. It runs
# as nobody: it needs no file but its configuration.
registry_up() {
    local d="$DIR/infra/registry" ep ak sk out i
    ep=$(grep '^LLMBOX_S3_ENDPOINT=' "$DIR/infra/s3.out" | head -n1 | cut -d= -f2-)
    ak=$(grep '^LLMBOX_S3_ACCESS_KEY=' "$DIR/infra/s3.out" | head -n1 | cut -d= -f2-)
    sk=$(grep '^LLMBOX_S3_SECRET_KEY=' "$DIR/infra/s3.out" | head -n1 | cut -d= -f2-)
    [ -n "$ep" ] && [ -n "$ak" ] && [ -n "$sk" ] || { fail "radosgw's endpoint and keys are not in $DIR/infra/s3.out"; return 1; }
    command -v docker-registry >/dev/null || { fail "docker-registry is not there (make deps)"; return 1; }
    say "bucket $REG_BUCKET (the registry's blobs)"
    if ! out=$(env $(cat "$DIR/cluster.env") LLMBOX_S3_BUCKET="$REG_BUCKET" LLMBOX_HOME=/ build/llmbox blob mkbucket 2>&1); then
        fail "creating the bucket $REG_BUCKET: $out"
        return 1
    fi
    mkdir -p "$d" && chmod 0755 "$d"
    # the secret key is in it: 0600, owned by nobody, who reads it
    (umask 077; cat > "$d/config.yml.tmp") <<EOF2
version: 0.1
log:
  level: info
  accesslog:
    disabled: true
storage:
  s3:
    accesskey: "$ak"
    secretkey: "$sk"
    region: us-east-1
    regionendpoint: "$ep"
    bucket: $REG_BUCKET
    secure: false
    v4auth: true
  # blobs served by the registry itself, not a redirect to radosgw
  redirect:
    disable: true
  delete:
    enabled: true
  cache:
    blobdescriptor: inmemory
http:
  addr: $HOST_IP:$REG_PORT
  secret: $(od -An -N16 -tx1 /dev/urandom | tr -d ' \n')
EOF2
    chown 65534:65534 "$d/config.yml.tmp" && mv "$d/config.yml.tmp" "$d/config.yml" || { fail "writing $d/config.yml"; return 1; }
    say "image registry (docker-registry, blobs in radosgw's $REG_BUCKET) on http://$HOST_IP:$REG_PORT"
    # a clean environment: the registry reads REGISTRY_* variables as
    # configuration, and the AWS SDK AWS_* ones (a CA bundle it then
    # cannot load makes it panic at start)
    setsid env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin setpriv --reuid=65534 --regid=65534 --clear-groups \
        docker-registry serve "$d/config.yml" \
        >"$DIR/infra/registry.out" 2>&1 </dev/null &
    echo $! > "$DIR/pids/infra.registry"
    for i in $(seq 300); do
        curl -fsS -m 2 -o /dev/null "http://$HOST_IP:$REG_PORT/v2/" 2>/dev/null && return 0
        alive "$DIR/pids/infra.registry" || break
        sleep 0.1
    done
    fail "the image registry did not answer on $HOST_IP:$REG_PORT: $(grep -m1 -v '^\s*$' "$DIR/infra/registry.out"; tail -n 3 "$DIR/infra/registry.out")"
    return 1
}

# One user, admin, on every web: a web without users answers only
# loopback clients, and HAProxy is not one. Its token in $DIR/token (0600).
user_up() {
    local out
    say "user admin (its token in $DIR/token)"
    out=$(LLMBOX_CONF=/dev/null build/llmbox user add admin) || { fail "llmbox user add admin"; return 1; }
    (umask 077; echo "$out" | grep -o 'lbx_[0-9a-f]*' | head -n1 > "$DIR/token")
    echo "$out" | sed -n '/^\[user "admin"\]/,/^token_sha256/p' > "$DIR/users.conf"
    # the only user: its limits are the cluster's, not a shared service's
    printf "max_tasks = 64\ntasks_per_minute = 600\n" >> "$DIR/users.conf"
    grep -q '^token_sha256 = ' "$DIR/users.conf" && [ -s "$DIR/token" ] || { fail "no token in: $out"; return 1; }
}

# member $1's home: its var/, its nginx listening on its address
home_up() {
    local m="$1" h="$DIR/$1"
    mkdir -p "$h" && chmod 0755 "$h"
    install -m 0644 "$DIR/users.conf" "$h/llmbox.conf" || return 1
    ln -sfn "$REPO/web" "$h/web"
    (cd "$h" && "$REPO/scripts/prepare-dirs.sh" llmbox >/dev/null) || return 1
    sed "s|listen 127.0.0.1:8080;|listen $(addr "$m"):8080;|" nginx.conf > "$h/var/run/nginx.conf" || return 1
    # its own image store: the repository's debootstrap images linked in
    # (read-only, shared), the layered ones it pulls its own
    mkdir -p "$h/var/images" && chmod 0755 "$h/var/images" || return 1
    local img
    for img in "$REPO"/var/images/*; do
        [ -e "$img/rootfs" ] && ln -sfn "$img" "$h/var/images/$(basename "$img")"
    done
    return 0
}

# runs llmbox with the cluster's environment and member $1's
member_env() {
    local m="$1"
    echo "LLMBOX_HOME=$DIR/$m"
    cat "$DIR/cluster.env"
    echo "LLMBOX_IMAGE_STORE=$DIR/$m/var/images"
    case "$m" in
        n*) echo "LLMBOX_NODE_NAME=$m"
            echo "LLMBOX_NODE_LISTEN=$(addr "$m"):8090"
            # where a create that mounts another node's E2B volume is sent
            # on (to the balancer, naming the holder): the bridge's side
            echo "LLMBOX_CLUSTER_URL=http://$HOST_IP:$PORT" ;;
    esac
}

member_up() {
    local m="$1" h="$DIR/$1" e
    say "$m: home $h"
    home_up "$m" || { fail "$m: preparing $h"; return 1; }
    mapfile -t e < <(member_env "$m")
    case "$m" in
        n*) say "$m: sandboxd, llmbox node ($(addr "$m"):8090), web + nginx ($(addr "$m"):8080)"
            start_in "$m" sandboxd env -C "$h" "${e[@]}" "$REPO/build/llmbox-sandboxd"
            start_in "$m" node env -C "$h" "${e[@]}" "$REPO/build/llmbox" node ;;
        *)  say "$m: web + nginx ($(addr "$m"):8080), task_runner = queue" ;;
    esac
    start_in "$m" web env -C "$h" "${e[@]}" "$REPO/build/llmbox" web
    start_in "$m" nginx env -C "$h" nginx -p "$h/" -c "$h/var/run/nginx.conf" -e var/log/nginx-error.log
}

lb_up() {
    local d="$DIR/infra/haproxy" m
    mkdir -p "$d"
    say "HAProxy on 127.0.0.1:$PORT and $HOST_IP:$PORT (deploy/haproxy/llmbox.cfg: creates over the nodes' webs, a backend per node)"
    {
        # the shipped file up to its example sandbox nodes, then ours: the
        # creates over every node's web, and one backend per node
        sed '/^# ---- the sandbox nodes ----/,$d' deploy/haproxy/llmbox.cfg
        printf '# ---- the sandbox nodes (scripts/cluster.sh) ----\nbackend sandbox_nodes\n    balance roundrobin\n'
        printf '    option httpchk GET /api/health\n    http-check expect status 200\n'
        printf '    default-server inter 2s fall 2 rise 2 check\n'
        for m in $NODES; do printf '    server %s %s:8080\n' "$m" "$(addr "$m")"; done
        for m in $NODES; do
            printf '\nbackend node_%s\n    option httpchk GET /api/health\n' "$m"
            printf '    http-check expect status 200\n    server %s %s:8080 check inter 2s\n' "$m" "$(addr "$m")"
        done
    } > "$d/llmbox.cfg"
    for m in $NODES; do echo "$m node_$m"; done > "$d/nodes.map"
    # the host's loopback for clients, the bridge's address for the nodes'
    # webs (cluster_url)
    LLMBOX_LB_BIND="127.0.0.1:$PORT,$HOST_IP:$PORT" LLMBOX_WEB1="$(addr w1):8080" LLMBOX_WEB2="$(addr w2):8080" \
        LLMBOX_NODES_MAP="$d/nodes.map" LLMBOX_LB_STATE="$d" \
        setsid haproxy -db -f "$d/llmbox.cfg" >"$d/haproxy.log" 2>&1 </dev/null &
    echo $! > "$DIR/pids/infra.haproxy"
}

wait_up() {
    local m i ok
    for i in $(seq 300); do
        ok=1
        for m in $WEBS $NODES; do
            curl -fsS -m 2 -o /dev/null "http://$(addr "$m"):8080/api/health" 2>/dev/null || ok=0
        done
        for m in $NODES; do
            curl -fsS -m 2 "http://$(addr "$m"):8090/healthz" 2>/dev/null | grep -q '"state":"running"' || ok=0
        done
        curl -fsS -m 2 -o /dev/null "http://127.0.0.1:$PORT/api/health" 2>/dev/null || ok=0
        [ $ok = 1 ] && return 0
        for f in "$DIR"/pids/*; do
            if ! alive "$f"; then
                m=$(basename "$f")
                fail "$m exited during start; the end of its log:"
                case "$m" in
                    infra.haproxy) tail -n 8 "$DIR/infra/haproxy/haproxy.log" >&2 ;;
                    infra.*) tail -n 8 "$DIR/infra/${m#*.}.out" >&2 ;;
                    *) tail -n 8 "$DIR/${m%%.*}/var/log/${m#*.}.out" >&2
                       [ "${m#*.}" = nginx ] && tail -n 8 "$DIR/${m%%.*}/var/log/nginx-error.log" >&2 ;;
                esac
                return 1
            fi
        done
        sleep 0.2
    done
    fail "not everything answered within 60 s (cluster.sh status)"
    return 1
}

up() {
    need_root
    if [ -e "$DIR/pids" ] || ip link show "$BR" >/dev/null 2>&1; then
        say "already up (state in $DIR); cluster.sh down first"
        [ -f "$DIR/url" ] && cat "$DIR/url"
        return 0
    fi
    for b in nginx haproxy ip curl build/llmbox build/llmbox-sandboxd; do
        command -v "$b" >/dev/null || { fail "$b is not there (make deps all)"; return 1; }
    done
    # down removes the whole folder: never one that holds anything else
    if [ -e "$DIR" ] && [ -n "$(ls -A "$DIR" 2>/dev/null)" ]; then
        fail "$DIR is not empty (LLMBOX_CLUSTER_DIR: a folder of its own, made by up)"
        return 1
    fi
    mkdir -p "$DIR/pids" && chmod 0755 "$DIR"
    for m in $WEBS $NODES; do mkdir -p "$DIR/$m" && chmod 0755 "$DIR/$m"; done
    net_up || { fail "the network (bridge $BR, namespaces)"; down; return 1; }
    infra_up || { down; return 1; }
    user_up || { down; return 1; }
    for m in $WEBS $NODES; do
        member_up "$m" || { down; return 1; }
    done
    lb_up
    say "waiting until every web, node and the balancer answer"
    wait_up || { [ -n "${LLMBOX_CLUSTER_KEEP:-}" ] || down; return 1; }
    echo "http://127.0.0.1:$PORT/" > "$DIR/url"
    say "up; the model at ${LLMBOX_LLM_URL:-$(grep '^LLMBOX_LLM_URL=' "$DIR/cluster.env" | cut -d= -f2-)}"
    say "log in with the token in $DIR/token (Authorization: Bearer ...)"
    say "the sandbox API (and E2B's API key): the token in $DIR/sandbox_token"
    say "the image registry: $HOST_IP:$REG_PORT (skopeo copy --dest-tls-verify=false ... docker://$HOST_IP:$REG_PORT/team/img:1)"
    echo "http://127.0.0.1:$PORT/"
}

# ---- down -------------------------------------------------------------------
# TERM to the processes in the pid files given, then KILL what is left
# after 10 s (all at once: each takes a second or two to stop)
stop_pids() {
    local f p live=() i
    for f in "$@"; do
        [ -f "$f" ] || continue
        p=$(cat "$f")
        if kill -0 "$p" 2>/dev/null; then
            say "stopping $(basename "$f") (pid $p)"
            kill -TERM "$p" 2>/dev/null && live+=("$p")
        fi
        rm -f "$f"
    done
    for i in $(seq 100); do
        for p in "${live[@]}"; do
            kill -0 "$p" 2>/dev/null && break
            p=""
        done
        [ -z "${p:-}" ] && return 0
        sleep 0.1
    done
    for p in "${live[@]}"; do
        kill -0 "$p" 2>/dev/null && say "pid $p did not stop in 10 s: killed" && kill -KILL "$p" 2>/dev/null
    done
    return 0
}

# a sandboxd that was killed leaves its sandboxes; a new one removes them
# at its start (stale cgroups, mounts, dirs), then stops cleanly
sandboxd_again() {
    local m="$1" e i
    [ -f "$DIR/pids/$m.sandboxd" ] && ! alive "$DIR/pids/$m.sandboxd" && [ -e "$DIR/$m/var" ] || return 0
    ip netns list 2>/dev/null | grep -qw "$(ns "$m")" || return 0
    say "$m: sandboxd was killed; starting it once to remove its sandboxes"
    rm -f "$DIR/$m/var/run/sandboxd.sock"
    mapfile -t e < <(member_env "$m")
    local log="$DIR/$m/var/log/sandboxd.out" before
    before=$(grep -c '"sandboxd [^ ]* listening on' "$log" 2>/dev/null)
    start_in "$m" sandboxd env -C "$DIR/$m" "${e[@]}" "$REPO/build/llmbox-sandboxd"
    # its "listening" line comes after it removed the stale sandboxes (its
    # socket, before: a TERM then would cut the removal short); a loaded
    # machine: up to 30 s
    for i in $(seq 300); do
        [ "$(grep -c '"sandboxd [^ ]* listening on' "$log" 2>/dev/null)" -gt "${before:-0}" ] && return 0
        alive "$DIR/pids/$m.sandboxd" || break
        sleep 0.1
    done
    fail "$m: the sandboxd started to remove its sandboxes did not listen: $(tail -n 3 "$DIR/$m/var/log/sandboxd.out")"
}

# whatever is left in member $1's namespace (agents of a killed node,
# nginx workers), then the namespace
member_gone() {
    local m="$1" pids
    ip netns list 2>/dev/null | grep -qw "$(ns "$m")" || return 0
    pids=$(netns_pids "$m")
    if [ -n "$pids" ]; then
        say "$m: killing what is left in $(ns "$m"): $(echo $pids)"
        kill -KILL $pids 2>/dev/null
        sleep 0.2
    fi
    ip netns del "$(ns "$m")" && say "$m: namespace $(ns "$m") removed"
}

down() {
    need_root
    local m left=0
    say "down (state in $DIR)"
    if [ ! -e "$DIR/pids" ]; then
        # the namespaces and bridge have fixed names: those of a cluster with
        # another state folder are not this one's to remove
        if ip link show "$BR" >/dev/null 2>&1; then
            say "nothing of $DIR runs; $BR and the lbxc-* namespaces are another state folder's (LLMBOX_CLUSTER_DIR)"
        fi
        rmdir "$DIR" 2>/dev/null   # never a folder that up did not make
        say "down"
        return 0
    fi
    stop_pids "$DIR/pids/infra.haproxy"
    # a cut member's links up again first: its processes then stop as the
    # others do instead of hanging on a store that does not answer
    for m in $WEBS $NODES; do
        if member_cut "$m"; then
            say "$m: its link was cut: healed to stop it"
            ip link set "lbxc-$m" up
        fi
    done
    # front to back, as scripts/run.sh: nginx, web, node, then sandboxd,
    # which destroys the sandboxes left
    stop_pids "$DIR"/pids/*.nginx "$DIR"/pids/*.web "$DIR"/pids/*.node
    for m in $NODES; do sandboxd_again "$m"; done
    stop_pids "$DIR"/pids/*.sandboxd
    for m in $WEBS $NODES; do member_gone "$m"; done
    stop_pids "$DIR/pids/infra.registry"
    stop_pids "$DIR/pids/infra.pg" "$DIR/pids/infra.s3"
    for m in $WEBS $NODES; do
        ip link del "lbxc-$m" 2>/dev/null
    done
    if ip link show "$BR" >/dev/null 2>&1; then
        ip link del "$BR" && say "bridge $BR removed"
    fi
    # anything still running from the state folder (its working folder or
    # its command line: a Ceph daemon of a start cut short) is a fault:
    # named and killed
    for p in /proc/[0-9]*; do
        [ "${p#/proc/}" = $$ ] && continue
        c=$(readlink "$p/cwd" 2>/dev/null) || continue
        tr '\0' ' ' < "$p/cmdline" 2>/dev/null | grep -qF "$DIR/" && c="$DIR"
        case "$c" in
            "$DIR"|"$DIR"/*) fail "still running in $c: pid ${p#/proc/} ($(cat "$p/comm" 2>/dev/null)); killed"
                kill -KILL "${p#/proc/}" 2>/dev/null; left=1 ;;
        esac
    done
    if grep -q " $DIR" /proc/self/mountinfo; then
        fail "mounts left under $DIR:"; grep " $DIR" /proc/self/mountinfo >&2; left=1
    fi
    rm -rf "$DIR"
    [ -e "$DIR" ] && { fail "cannot remove $DIR"; left=1; }
    say "down"
    return $left
}

# ---- status, faults ---------------------------------------------------------
status() {
    local m j
    if [ ! -e "$DIR/pids" ]; then
        say "not up"
        return 1
    fi
    if curl -fsS -m 2 -o /dev/null "http://127.0.0.1:$PORT/api/health" 2>/dev/null; then
        echo "lb  up    http://127.0.0.1:$PORT/"
    else
        echo "lb  down  http://127.0.0.1:$PORT/"
    fi
    for m in $WEBS $NODES; do
        member_cut "$m" && echo "$m  cut   (link lbxc-$m down: cluster.sh heal $m)"
    done
    for m in $WEBS $NODES; do
        if j=$(curl -fsS -m 2 -H "Authorization: Bearer $(cat "$DIR/token" 2>/dev/null)" "http://$(addr "$m"):8080/api/health" 2>/dev/null); then
            echo "$m  web up    $(addr "$m"):8080 $(echo "$j" | python3 -c 'import json,sys
h=json.load(sys.stdin); t=h.get("tasks") or {}; a=h.get("sandbox_api") or {}
print("tasks %s/%s sandboxes %s" % (t.get("running"), t.get("max"), a.get("sandboxes")))')"
        else
            echo "$m  web down  $(addr "$m"):8080"
        fi
    done
    if curl -fsS -m 2 -o /dev/null "http://$HOST_IP:$REG_PORT/v2/" 2>/dev/null; then
        echo "registry up    $HOST_IP:$REG_PORT (blobs in radosgw's $REG_BUCKET)"
    else
        echo "registry down  $HOST_IP:$REG_PORT"
    fi
    for m in $NODES; do
        if j=$(curl -sS -m 2 "http://$(addr "$m"):8090/healthz" 2>/dev/null) && [ -n "$j" ]; then
            echo "$m  node $(echo "$j" | python3 -c 'import json,sys
h=json.load(sys.stdin)
print("%-5s tasks %s/%s lease_expires %s" % (h.get("state"), h.get("tasks"), h.get("capacity"), h.get("lease_expires")))')"
        else
            echo "$m  node down  (no answer on $(addr "$m"):8090)"
        fi
    done
}

kill_member() {
    need_root
    local m="$1" kind="$2" pids
    case " $([ "$kind" = node ] && echo $NODES || echo $WEBS) " in
        *" $m "*) ;;
        *) fail "no $kind named '$m' (the ${kind}s: $([ "$kind" = node ] && echo $NODES || echo $WEBS))"; return 1 ;;
    esac
    if ! ip netns list 2>/dev/null | grep -qw "$(ns "$m")"; then
        fail "$m: not up"
        return 1
    fi
    pids=$(netns_pids "$m")
    if [ -z "$pids" ]; then
        say "$m: nothing runs"
        return 0
    fi
    # stopped first, all of them: as when a host dies, none of them sees
    # another go (an agent would report its sandboxd's end as its own)
    say "$m: kill -9 $(echo $pids)"
    kill -STOP $pids 2>/dev/null
    kill -KILL $pids 2>/dev/null
    return 0
}

# A partition: member $1's veth, on the bridge's side, down (cut) or up
# (heal). Everything it reaches goes over that link (PostgreSQL, radosgw,
# the model, the balancer's connections to it), so a cut member is cut off
# from all of them while its processes run on: a node keeps its agents
# until its lease runs out unrenewed, then its watchdog kills them.
member_link() {
    need_root
    local m="$1" how="$2"
    case " $WEBS $NODES " in
        *" $m "*) ;;
        *) fail "no member named '$m' (the webs: $WEBS; the nodes: $NODES)"; return 1 ;;
    esac
    if ! ip link show "lbxc-$m" >/dev/null 2>&1; then
        fail "$m: not up (no link lbxc-$m)"
        return 1
    fi
    ip link set "lbxc-$m" "$how" || { fail "$m: ip link set lbxc-$m $how"; return 1; }
    if [ "$how" = down ]; then
        say "$m: cut (link lbxc-$m down): it reaches nothing and nothing reaches it"
    else
        say "$m: healed (link lbxc-$m up)"
    fi
}

# a link that is down (cut), for status
member_cut() { ip -o link show "lbxc-$1" 2>/dev/null | grep -q '[<,]UP[,>]' && return 1; ip link show "lbxc-$1" >/dev/null 2>&1; }

partition() {
    local m="$1" secs="$2"
    case "$secs" in
        ''|*[!0-9]*) fail "partition: SECONDS must be a whole number, not '$secs'"; return 2 ;;
    esac
    [ "$secs" -le 86400 ] || { fail "partition: at most 86400 seconds"; return 2; }
    member_link "$m" down || return 1
    # healed even when interrupted: a forgotten cut outlives the command
    trap 'member_link "$m" up; exit 130' INT TERM
    # in the background and waited for: a trap runs at once, not after sleep
    sleep "$secs" &
    wait $!
    trap - INT TERM
    member_link "$m" up
}

# `make cluster`: up, then wait; Ctrl-C (or TERM) brings it down
run() {
    up || exit 1
    trap 'kill $! 2>/dev/null; echo; down; exit 0' INT TERM
    say "Ctrl-C stops the cluster"
    while :; do sleep 3600 & wait $!; done
}

case "${1:-}" in
    up) up ;;
    run) run ;;
    down) down ;;
    status) status ;;
    kill-node) [ $# = 2 ] || { fail "usage: cluster.sh kill-node NAME"; exit 2; }; kill_member "$2" node ;;
    kill-web) [ $# = 2 ] || { fail "usage: cluster.sh kill-web NAME"; exit 2; }; kill_member "$2" web ;;
    cut) [ $# = 2 ] || { fail "usage: cluster.sh cut NAME"; exit 2; }; member_link "$2" down ;;
    heal) [ $# = 2 ] || { fail "usage: cluster.sh heal NAME"; exit 2; }; member_link "$2" up ;;
    partition) [ $# = 3 ] || { fail "usage: cluster.sh partition NAME SECONDS"; exit 2; }; partition "$2" "$3" ;;
    *) echo "usage: scripts/cluster.sh up|down|status|kill-node NAME|kill-web NAME|cut NAME|heal NAME|partition NAME SECONDS" >&2
       exit 2 ;;
esac
