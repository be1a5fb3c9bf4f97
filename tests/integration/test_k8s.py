#!/usr/bin/env python3
"""deploy/k8s (docs/OPERATIONS.md, "Kubernetes"): the example overlay and
the base render with `kubectl kustomize` and pass tests/k8s/check.mjs
(Kubernetes' schemas, unknown fields, llmbox's rules); broken copies fail
it, each for the reason it was broken, so the check cannot pass vacuously;
the overlay's llmbox.conf passes `llmbox config check`; deploy/k8s/prepare.sh
gives nginx a configuration `nginx -t` accepts; llmbox-sandboxd does what a
node asks of it with exactly the capabilities docs/OPERATIONS.md lists for
the DaemonSet, and fails without any one of them but the two that only
degrade it (as root with the sandbox image; SKIP otherwise).

Needs kubectl (scripts/deps.sh installs Debian's kubernetes-client when
none is there), node and setpriv (util-linux); installs tests/k8s's pinned
npm packages with `npm ci` on first use. About 15 s."""
import json
import os
import re
import secrets
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from sandbox_rpc import IMAGES, Conn, skip_reason  # noqa: E402

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
K8S = os.path.join(ROOT, "deploy", "k8s")
CHECK_DIR = os.path.join(ROOT, "tests", "k8s")
LLMBOX = os.path.join(ROOT, os.environ.get("BUILD", "build"), "llmbox")

failures = 0


def ok(name):
    print(f"PASS {name}", flush=True)


def fail(name, why):
    global failures
    failures += 1
    print(f"FAIL {name}: {why}", flush=True)


def kubectl():
    exe = shutil.which("kubectl")
    if not exe:
        return None, "kubectl is missing (scripts/deps.sh installs Debian's kubernetes-client)"
    r = subprocess.run([exe, "kustomize", "--help"], capture_output=True, text=True, timeout=60)
    if r.returncode != 0:
        return None, f"{exe} has no `kustomize` subcommand (kubectl 1.14 or later needed)"
    return exe, ""


def npm_ci():
    if os.path.isdir(os.path.join(CHECK_DIR, "node_modules", "kubernetes-models")):
        return ""
    r = subprocess.run(["npm", "ci", "--no-audit", "--no-fund", "--silent"], cwd=CHECK_DIR,
                       capture_output=True, text=True, timeout=600)
    return "" if r.returncode == 0 else f"npm ci in tests/k8s failed: {r.stderr.strip()[-500:]}"


def copy_tree(tmp):
    """A copy of deploy/k8s with the overlay's secret files made from their
    examples, with random values (returned, to look for them later)."""
    dst = os.path.join(tmp, "k8s")
    shutil.copytree(K8S, dst)
    ov = os.path.join(dst, "overlays", "example")
    values = {}
    for name in ("secrets.env", "model-keys.env"):
        lines = []
        with open(os.path.join(ov, name + ".example")) as f:
            for line in f:
                m = re.match(r"^([A-Za-z_][A-Za-z0-9_]*)=", line)
                if m:
                    v = secrets.token_hex(32)
                    values[m.group(1)] = v
                    line = f"{m.group(1)}={v}\n"
                lines.append(line)
        with open(os.path.join(ov, name), "w") as f:
            f.writelines(lines)
    return dst, values


def render(exe, d):
    r = subprocess.run([exe, "kustomize", d], capture_output=True, text=True, timeout=120)
    return r.returncode, r.stdout, r.stderr


def edit(path, old, new, regex=False):
    with open(path) as f:
        s = f.read()
    n = len(re.findall(old, s, flags=re.S)) if regex else s.count(old)
    if n != 1:
        # the broken copy must be broken exactly as meant: a manifest that
        # changed under the test fails it rather than testing nothing
        raise AssertionError(f"{os.path.basename(path)}: {old!r} found {n} times, expected once")
    s = re.sub(old, new, s, flags=re.S) if regex else s.replace(old, new)
    with open(path, "w") as f:
        f.write(s)


# (name, file under the copy, old, new, regex?, a text every problem list must have)
MUTATIONS = [
    ("misspelt_field_fails", "base/web.yaml",
     "          readinessProbe:\n            httpGet: {path: /api/health, port: http}",
     "          readinesProbe:\n            httpGet: {path: /api/health, port: http}", False,
     ["readinesProbe", "no container has a readinessProbe"]),
    ("missing_required_field_fails", "base/web-service.yaml", "      port: 80\n", "", False,
     ["must have required property port", "Property '\"port\"' is missing"]),
    ("value_outside_enum_fails", "base/web.yaml", "    type: RollingUpdate\n", "    type: Rolling\n", False,
     ["strategy/type must be equal to one of the allowed values"]),
    ("secret_in_configmap_fails", "overlays/example/llmbox.conf", "s3_addressing = path\n",
     "s3_addressing = path\ns3_secret_key = {s3_secret_key}\n", False,
     ["sets s3_secret_key", "holds the value of a Secret"]),
    ("secret_as_literal_env_fails", "base/web.yaml",
     "            - name: LLMBOX_DB_URL\n              valueFrom: {secretKeyRef: {name: llmbox-secrets, key: db_url}}\n"
     "            - name: LLMBOX_S3_ACCESS_KEY",
     "            - name: LLMBOX_DB_URL\n              value: postgresql://u:p@h/db\n"
     "            - name: LLMBOX_S3_ACCESS_KEY", False,
     ["sets LLMBOX_DB_URL as a literal"]),
    ("missing_probe_fails", "base/node.yaml",
     r"          readinessProbe:\n            httpGet: \{path: /healthz, port: healthz\}\n"
     r"            periodSeconds: 5\n            failureThreshold: 2\n", "", True,
     ["no readiness and liveness probes on /healthz"]),
    ("pdb_selecting_nothing_fails", "base/web-pdb.yaml",
     "      app.kubernetes.io/component: web\n", "      app.kubernetes.io/component: webs\n", False,
     ["no PodDisruptionBudget selects the web pods"]),
    ("web_as_root_fails", "base/web.yaml",
     r"(- name: web\n.*?)runAsUser: 101\n(\s*)runAsGroup: 101\n(\s*)runAsNonRoot: true",
     r"\1runAsUser: 0\n\2runAsGroup: 0\n\3runAsNonRoot: false", True,
     ["container web: runAsNonRoot is not true", "container web: runAsUser is not a non-zero uid"]),
    ("extra_capability_fails", "base/node.yaml",
     '"SETUID",\n                    "SYS_ADMIN", "SYS_PTRACE", "SYS_RESOURCE"]',
     '"SETUID",\n                    "SYS_ADMIN", "SYS_MODULE", "SYS_PTRACE", "SYS_RESOURCE"]', False,
     ["sandboxd adds capabilities"]),
    ("privileged_sandboxd_fails", "base/node.yaml", "            privileged: false\n",
     "            privileged: true\n", False, ["sandboxd is privileged"]),
    ("no_escalation_with_sys_admin_fails", "base/node.yaml", "            privileged: false\n",
     "            privileged: false\n            allowPrivilegeEscalation: false\n", False,
     ["refused by the API server"]),
]


def main():
    exe, why = kubectl()
    if not exe:
        fail("k8s_tools", why)
        return
    why = npm_ci()
    if why:
        fail("k8s_tools", why)
        return
    tmp = tempfile.mkdtemp(prefix="llmbox-k8s-")
    try:
        run(exe, tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def run(exe, tmp):
    rendered = {}      # name -> the file check.mjs reads
    expect = {}        # name -> texts its problems must have (None: clean)
    for name, rel, old, new, regex, must in [("overlay_renders_and_passes", None, None, None, False, None),
                                            ("base_renders_and_passes", None, None, None, False, None)] + MUTATIONS:
        d, values = copy_tree(os.path.join(tmp, name))
        if rel:
            try:
                edit(os.path.join(d, rel), old, new.replace("{s3_secret_key}", values["s3_secret_key"]), regex)
            except AssertionError as e:
                fail(name, str(e))
                continue
        target = os.path.join(d, "base" if name.startswith("base_") else "overlays/example")
        rc, out, err = render(exe, target)
        if rc != 0:
            fail(name, f"kubectl kustomize failed: {err.strip()[-400:]}")
            continue
        f = os.path.join(tmp, name + ".yaml")
        with open(f, "w") as fh:
            fh.write(out)
        rendered[name] = f
        expect[name] = must
    r = subprocess.run(["node", os.path.join(CHECK_DIR, "check.mjs"), "--json"] + list(rendered.values()),
                       capture_output=True, text=True, timeout=300)
    try:
        problems = json.loads(r.stdout.splitlines()[0])
    except (ValueError, IndexError):
        fail("k8s_check", f"check.mjs printed no JSON (exit {r.returncode}): {r.stderr.strip()[-600:]}")
        return
    for name, f in rendered.items():
        got = problems.get(f)
        if got is None:
            fail(name, "check.mjs did not report on this file")
        elif expect[name] is None:
            if got:
                fail(name, "; ".join(got[:5]))
            else:
                ok(name)
        elif not got:
            fail(name, "the broken manifest passed the check")
        else:
            missing = [m for m in expect[name] if not any(m in p for p in got)]
            if missing:
                fail(name, f"no problem mentions {missing}; got: {'; '.join(got[:4])}")
            else:
                ok(name)
    if r.returncode != 1:
        fail("k8s_check_exit", f"check.mjs exited {r.returncode} with broken files among its inputs (want 1)")

    # the exit status alone: a clean file gives 0
    r = subprocess.run(["node", os.path.join(CHECK_DIR, "check.mjs"), rendered.get("overlay_renders_and_passes", "")],
                       capture_output=True, text=True, timeout=300)
    if r.returncode == 0 and "ok, " in r.stdout:
        ok("check_exits_0_on_a_clean_render")
    else:
        fail("check_exits_0_on_a_clean_render", f"exit {r.returncode}: {r.stdout.strip()[-300:]}")

    docs_check(rendered.get("overlay_renders_and_passes"), tmp)
    conf_check()
    node_name_check()
    prepare_check(tmp)
    caps_check()


def documented_caps():
    """The rows of docs/OPERATIONS.md's "sandboxd's privileges" table, as
    check.mjs reads them."""
    with open(os.path.join(ROOT, "docs", "OPERATIONS.md")) as f:
        doc = f.read()
    start = doc.index("### sandboxd's privileges")
    rest = doc[start + 10:]
    m = re.search(r"\n#{2,3} ", rest)
    return re.findall(r"^\| `CAP_([A-Z_]+)` \|", rest[:m.start()] if m else rest, re.M)


def sandboxd_with(caps):
    """Starts build/llmbox-sandboxd as root with only `caps` in its bounding
    set (setpriv, as the container runtime does with capabilities.add), runs
    what the node pod needs of it, and stops it. Returns "ok" or the step
    that failed, with sandboxd's answer."""
    sd = os.path.join(ROOT, os.environ.get("BUILD", "build"), "llmbox-sandboxd")
    tmp = tempfile.mkdtemp(prefix="llmbox-k8scaps-")
    sock = os.path.join(tmp, "sd.sock")
    env = dict(os.environ, LLMBOX_VAR=os.path.join(tmp, "var"), LLMBOX_IMAGE_STORE=IMAGES, LLMBOX_HOME=ROOT)
    env.pop("LLMBOX_SANDBOXD_SOCKET", None)
    bset = "-all" + "".join(",+" + c.lower() for c in caps)
    log = open(os.path.join(tmp, "log"), "w")
    p = subprocess.Popen(["setpriv", "--bounding-set", bset, "--inh-caps", "-all", sd, "--socket", sock],
                         env=env, stdout=log, stderr=log, cwd=ROOT)
    step = "start"
    try:
        for _ in range(400):
            if os.path.exists(sock) or p.poll() is not None:
                break
            time.sleep(0.025)
        if not os.path.exists(sock):
            return f"start: no socket (exit {p.poll()})"
        with Conn(sock, 30) as c:
            step = "create"
            r = c.call({"op": "create"})
            if not r.get("ok"):
                return f"{step}: {r.get('message')}"
            sid = r["id"]
            for step, req, data in [("exec", {"op": "exec", "id": sid, "command": "echo hi", "timeout_ms": 20000}, None),
                                    ("write", {"op": "write", "id": sid, "path": "/testbed/output/a.txt"}, b"data"),
                                    ("read", {"op": "read", "id": sid, "path": "/testbed/output/a.txt"}, None),
                                    ("freeze", {"op": "freeze", "id": sid}, None),
                                    ("thaw", {"op": "thaw", "id": sid}, None),
                                    ("timeout", {"op": "exec", "id": sid, "command": "sleep 30", "timeout_ms": 500}, None),
                                    ("save", {"op": "save", "id": sid, "state": "k8s"}, None)]:
                r = c.call(req, data)
                good = r.get("state") in ("exited", "timeout") if step in ("exec", "timeout") else r.get("ok")
                if not good:
                    return f"{step}: {r.get('message') or r}"
            step = "restore"
            r = c.call({"op": "create", "restore": "k8s"})
            if not r.get("ok"):
                return f"{step}: {r.get('message')}"
            s2 = r["id"]
            r = c.call({"op": "exec", "id": s2, "command": "cat /testbed/output/a.txt", "timeout_ms": 20000})
            if r.get("stdout") != "data":
                return f"restore: the restored sandbox has {r!r}"
            for x in (sid, s2):
                step = "destroy"
                r = c.call({"op": "destroy", "id": x})
                if not r.get("ok"):
                    return f"{step}: {r.get('message')}"
        return "ok"
    except (OSError, ValueError, KeyError) as e:
        return f"{step}: {e}"
    finally:
        p.terminate()
        try:
            p.wait(20)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()
        log.close()
        shutil.rmtree(tmp, ignore_errors=True)


# the capabilities whose loss only degrades sandboxd (docs/OPERATIONS.md):
# without KILL a command past its timeout is never stopped (and shutdown
# hangs), without SYS_RESOURCE init is not shielded from the OOM killer
DEGRADE_ONLY = ("KILL", "SYS_RESOURCE")


def caps_check():
    """sandboxd does all the node pod asks of it with exactly the documented
    capabilities, and each one but DEGRADE_ONLY's is needed: without it a
    step fails. (On this host: no container runtime, so no seccomp or
    AppArmor profile and the host's cgroup tree, as node.yaml sets them.)"""
    name = "sandboxd_runs_with_exactly_the_documented_capabilities"
    why = skip_reason()
    if why or not shutil.which("setpriv"):
        print(f"SKIP {name}: {why or 'setpriv is missing (util-linux)'}")
        return
    caps = documented_caps()
    r = sandboxd_with(caps)
    if r != "ok":
        fail(name, f"with {caps}: {r}")
        return
    ok(name)
    name = "each_documented_capability_is_needed"
    unneeded = []
    for cap in caps:
        if cap in DEGRADE_ONLY:
            continue
        r = sandboxd_with([c for c in caps if c != cap])
        if r == "ok":
            unneeded.append(cap)
    if unneeded:
        fail(name, f"sandboxd did everything without {unneeded}: drop them from the table and node.yaml")
    else:
        ok(name)


def docs_check(clean, tmp):
    """The capability list is the one docs/OPERATIONS.md shows: with a row
    of its table gone, the same clean render fails."""
    name = "capabilities_follow_the_documented_table"
    with open(os.path.join(ROOT, "docs", "OPERATIONS.md")) as f:
        doc = f.read()
    row = re.search(r"^\| `CAP_NET_ADMIN` \|.*\n", doc, re.M)
    if not clean or not row:
        fail(name, "no clean render, or no CAP_NET_ADMIN row in docs/OPERATIONS.md's table")
        return
    copy = os.path.join(tmp, "OPERATIONS.md")
    with open(copy, "w") as f:
        f.write(doc.replace(row.group(0), ""))
    r = subprocess.run(["node", os.path.join(CHECK_DIR, "check.mjs"), clean], capture_output=True, text=True,
                       timeout=300, env=dict(os.environ, LLMBOX_K8S_OPERATIONS_MD=copy))
    if r.returncode == 1 and "sandboxd adds capabilities" in r.stdout and "NET_ADMIN" in r.stdout:
        ok(name)
    else:
        fail(name, f"exit {r.returncode}: {r.stdout.strip()[-300:]}")


def conf_check():
    name = "overlay_conf_passes_config_check"
    if not os.access(LLMBOX, os.X_OK):
        fail(name, f"{LLMBOX} is missing (make all)")
        return
    for conf in ("overlays/example/llmbox.conf", "base/llmbox.conf"):
        env = {k: v for k, v in os.environ.items() if not k.startswith("LLMBOX_")}
        env["LLMBOX_CONF"] = os.path.join(K8S, conf)
        env["LLMBOX_HOME"] = ROOT
        r = subprocess.run([LLMBOX, "config", "check"], capture_output=True, text=True, env=env, timeout=60)
        if r.returncode != 0:
            fail(name, f"{conf}: {(r.stdout + r.stderr).strip()[-300:]}")
            return
    ok(name)


def node_name_check():
    """node-name.sh maps Kubernetes node names to names llmbox accepts,
    the same way every time, and keeps long names apart."""
    name = "node_name_mapping_is_valid_and_stable"
    script = os.path.join(K8S, "node-name.sh")
    long_a = "node-" + "a" * 70 + ".example.internal"
    long_b = "node-" + "a" * 70 + ".example.external"
    want = {"ip-10-0-1-2.ec2.internal": "ip-10-0-1-2-ec2-internal", "Worker_1": "worker-1", "n1": "n1"}
    got = {}
    for raw in list(want) + [long_a, long_b]:
        env = {k: v for k, v in os.environ.items() if not k.startswith("LLMBOX_")}
        env.update(K8S_NODE_NAME=raw, LLMBOX_CONF=os.path.join(K8S, "base/llmbox.conf"), LLMBOX_HOME=ROOT)
        r = subprocess.run(["sh", script, "sh", "-c", 'printf %s "$LLMBOX_NODE_NAME"'],
                           capture_output=True, text=True, env=env, timeout=30)
        if r.returncode != 0:
            fail(name, f"{raw}: exit {r.returncode} {r.stderr.strip()}")
            return
        got[raw] = r.stdout
        # llmbox itself takes the name (its config check runs the same rules)
        r = subprocess.run(["sh", script, LLMBOX, "config", "check"], capture_output=True, text=True,
                           env=env, timeout=60)
        if r.returncode != 0:
            fail(name, f"{raw} -> {got[raw]!r} refused: {(r.stdout + r.stderr).strip()[-300:]}")
            return
    for raw, w in want.items():
        if got[raw] != w:
            fail(name, f"{raw} -> {got[raw]!r}, want {w!r}")
            return
    if got[long_a] == got[long_b] or max(len(got[long_a]), len(got[long_b])) > 63:
        fail(name, f"long names: {got[long_a]!r} and {got[long_b]!r}")
        return
    r = subprocess.run(["sh", script, "true"], capture_output=True, text=True,
                       env={k: v for k, v in os.environ.items() if k != "K8S_NODE_NAME"}, timeout=30)
    if r.returncode == 0 or "K8S_NODE_NAME is empty" not in r.stderr:
        fail(name, f"no K8S_NODE_NAME was taken: exit {r.returncode} {r.stderr.strip()}")
        return
    ok(name)


def prepare_check(tmp):
    """prepare.sh in a copy of the parts of the home it reads; nginx -t."""
    name = "prepare_gives_nginx_a_valid_config"
    nginx = shutil.which("nginx") or "/usr/sbin/nginx"
    if not os.access(nginx, os.X_OK):
        fail(name, "nginx is missing (scripts/deps.sh installs nginx-light)")
        return
    home = os.path.join(tmp, "home")
    os.makedirs(os.path.join(home, "scripts"))
    os.makedirs(os.path.join(home, "deploy", "k8s"))
    shutil.copy(os.path.join(ROOT, "nginx.conf"), home)
    shutil.copy(os.path.join(ROOT, "scripts", "nginx-local.sh"), os.path.join(home, "scripts"))
    shutil.copy(os.path.join(K8S, "prepare.sh"), os.path.join(home, "deploy", "k8s"))
    os.symlink(os.path.join(ROOT, "web"), os.path.join(home, "web"))
    key = os.path.join(tmp, "download_key")
    env = dict(os.environ, LLMBOX_DOWNLOAD_KEY_FILE=key)
    # a key that is not one is refused, with a sentence, and nothing made
    with open(key, "w") as f:
        f.write("not-a-key\n")
    r = subprocess.run(["sh", "deploy/k8s/prepare.sh"], cwd=home, env=env, capture_output=True, text=True)
    if r.returncode == 0 or "not 64 lowercase hex digits" not in r.stderr or \
            os.path.exists(os.path.join(home, "var", "run", "nginx.conf")):
        fail(name, f"a bad key was taken: exit {r.returncode}, {r.stderr.strip()}")
        return
    k = secrets.token_hex(32)
    with open(key, "w") as f:
        f.write(k + "\n")
    r = subprocess.run(["sh", "deploy/k8s/prepare.sh"], cwd=home, env=env, capture_output=True, text=True)
    if r.returncode != 0:
        fail(name, f"prepare.sh: {r.stderr.strip()[-300:]}")
        return
    with open(os.path.join(home, "var", "run", "nginx.conf")) as f:
        conf = f.read()
    with open(os.path.join(home, "var", "run", "nginx-local.conf")) as f:
        local = f.read()
    if not re.search(r"^\s*listen 8080;", conf, re.M) or re.search(r"^user ", conf, re.M) or k not in local:
        fail(name, "var/run/nginx.conf does not listen on 8080, still names a user, or the key is not the Secret's")
        return
    r = subprocess.run([nginx, "-t", "-q", "-e", "stderr", "-p", home + "/", "-c",
                        os.path.join(home, "var", "run", "nginx.conf")], capture_output=True, text=True)
    if r.returncode != 0:
        fail(name, f"nginx -t: {r.stderr.strip()[-300:]}")
        return
    ok(name)


if __name__ == "__main__":
    main()
    sys.exit(1 if failures else 0)
