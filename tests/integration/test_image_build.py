#!/usr/bin/env python3
"""`llmbox image build -f Dockerfile` end to end (docs/IMAGES.md),
against a real sandboxd and a base image made with umoci (python3 stdlib
only, run as root; needs umoci):

  - every instruction (ARG before and after FROM, --build-arg, ENV, LABEL,
    WORKDIR, COPY of files and a folder, ADD, SHELL, RUN, USER): the RUN's
    output streamed with its "Step N/M" prefix, and a sandbox of the built
    image has the files, the Env, the WorkingDir and the User;
  - the cache: the same build again runs no step (0 sandboxes, every
    RUN/COPY/ADD step "from the cache", the same layers), a changed copied
    file reruns its step and the RUN after it, a changed --build-arg reruns
    the RUN;
  - FROM a registry's reference (Debian's docker-registry on loopback,
    the base pushed there with skopeo): pulled first, then built on;
  - a RUN's output reaches stderr while the command still runs;
  - a failing RUN: the step and its exit code named, nothing registered,
    the build's own images, saved states and staging removed;
  - --network: the build's own setting, asked of sandboxd for each RUN;
  - kill -9 of a build while its RUN runs: nothing registered under its
    name, and the next build removes its stage and its RUN image;
  - COPY of a path outside the context (.., an absolute path that climbs,
    a symlink in the context that points out) refused before any sandbox,
    and a URL in ADD refused;
  - two stages: stage one RUNs something making a file, stage two COPY
    --from's it with --chown by names (the image's own /etc/passwd and
    /etc/group): the result has it and none of stage one's other files or
    layers, and a second build takes every step from the cache; COPY
    --from= an image of the store copies its file; a --from
    source that links out of the stage's root, a --chown name the image
    lacks and one read through a symlinked /etc/passwd are refused
    (checked against the old code: the parser refused a second FROM and
    COPY --from, --chown took numbers only).

    python3 tests/integration/test_image_build.py   (from the repo root)

Checked against the old code (before the builder ran steps): `image build
-f` without --check only said "running its steps in sandboxes is not built
yet" and exited 1, so every check but the refusals fails there.
"""
import json
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "lib"))
from oci_images import tiny_rootfs, umoci_image  # noqa: E402
from sandbox_rpc import BIN, Daemon, Reporter, Skip  # noqa: E402
from stack import free_port  # noqa: E402

BASE = "team/base:1"


class Env:
    def __init__(self):
        self.tmp = tempfile.mkdtemp(prefix="llmbox-build-")
        self.store = os.path.join(self.tmp, "store")
        os.makedirs(self.store)
        self.ctx = os.path.join(self.tmp, "ctx")
        os.makedirs(os.path.join(self.ctx, "sub", "deep"))
        self.write("data.txt", "data one\n")
        self.write("more.txt", "more\n")
        self.write("sub/a.txt", "a\n")
        self.write("sub/deep/b.txt", "b\n")
        os.symlink("a.txt", os.path.join(self.ctx, "sub", "link"))
        with open(os.path.join(self.tmp, "secret"), "w") as f:
            f.write("outside\n")
        os.symlink(os.path.join(self.tmp, "secret"), os.path.join(self.ctx, "escape"))
        self.d = None

    def write(self, rel, text):
        with open(os.path.join(self.ctx, rel), "w") as f:
            f.write(text)

    def env(self):
        e = dict(os.environ, LLMBOX_IMAGE_STORE=self.store, LLMBOX_POOL_IMAGES="default")
        if self.d:
            e.update(LLMBOX_VAR=self.d.var, LLMBOX_SANDBOXD_SOCKET=self.d.sock)
        return e

    def llmbox(self, *args, check=True):
        r = subprocess.run([BIN, "image"] + list(args), env=self.env(), capture_output=True, text=True,
                           timeout=600)
        if check:
            assert r.returncode == 0, (args, r.stdout, r.stderr)
        return r

    def build(self, dockerfile, name, *extra, check=True):
        df = os.path.join(self.tmp, "Dockerfile")
        with open(df, "w") as f:
            f.write(dockerfile)
        return self.llmbox("build", "-f", df, *extra, name, self.ctx, check=check)

    def images(self):
        out = json.loads(self.llmbox("ls", "--json").stdout)
        return {i["name"]: i for i in out["images"] if i["kind"] == "layered"}

    def record(self, name):
        p = os.path.join(self.store, "oci", "refs", name.replace("/", "+").replace(":", "=") + ".json")
        with open(p) as f:
            return json.load(f)

    def close(self):
        shutil.rmtree(self.tmp, ignore_errors=True)


FULL = """\
ARG BASE_IMAGE=team/base:1
FROM ${BASE_IMAGE}
ARG GREETING=hello
ENV APP_HOME=/opt/app MSG="${GREETING} world"
LABEL org.example.k="v 1"
WORKDIR $APP_HOME
COPY data.txt sub ./
ADD more.txt /opt/extra/
SHELL ["/bin/bash", "-c"]
RUN echo "$GREETING" > greet.txt && [[ -n "$GREETING" ]] && mkdir -p /var/made && echo run-said-this
USER 1000
"""


def check_every_instruction(e):
    r = e.build(FULL, "team/full:1", "--build-arg", "GREETING=hi")
    assert "built team/full:1: 11 steps, 1 run in a sandbox, 0 from the cache" in r.stdout, (r.stdout, r.stderr)
    # the RUN's own output, streamed with its step
    assert "Step 10/11 | run-said-this" in r.stderr, r.stderr
    img = e.images()["team/full:1"]
    assert img["workdir"] == "/opt/app" and img["user"] == "1000", img
    assert "MSG=hi world" in img["env"] and "APP_HOME=/opt/app" in img["env"], img
    rec = e.record("team/full:1")
    base = e.record(BASE)
    assert rec["layers"][:len(base["layers"])] == base["layers"], (rec, base)
    cfg_hex = rec["config"].split(":")[1]
    with open(os.path.join(e.store, "oci", "blobs", "sha256", cfg_hex)) as f:
        cfg = json.load(f)
    assert cfg["config"]["Labels"] == {"org.example.k": "v 1"}, cfg
    # the RUN's layer holds the step's work, not sandboxd's own files nor
    # opaque marks that would hide the image's /run and /testbed
    with tarfile.open(os.path.join(e.store, "oci", "blobs", "sha256", rec["layers"][-1])) as t:
        names = t.getnames()
    assert "opt/app/greet.txt" in names and "var/made" in names, names
    assert not [n for n in names if n.startswith(("run/", "testbed/")) and
                (n.endswith(".wh..wh..opq") or n == "run/.llmbox-shell")], names
    # a sandbox of the built image: its files, Env, WorkingDir and User
    c = e.d.connect()
    sid = c.create(image="team/full:1")
    r = c.exec(sid, "pwd; id -u; echo \"$MSG\"; cat greet.txt data.txt a.txt deep/b.txt /opt/extra/more.txt; "
                    "readlink link; test -d /var/made && echo made")
    assert r["exit_code"] == 0, r
    assert r["stdout"] == "/opt/app\n1000\nhi world\nhi\ndata one\na\nb\nmore\na.txt\nmade\n", r
    c.destroy(sid)
    # the build left nothing of its own behind
    assert os.listdir(os.path.join(e.store, "oci", "tmp")) == []
    assert not [n for n in e.images() if n.startswith("llmbox-build/")], e.images().keys()


def check_cache(e):
    first = e.record("team/full:1")
    r = e.build(FULL, "team/full:1", "--build-arg", "GREETING=hi")
    # a second build runs no step: no sandbox, every layer step from the cache
    assert "11 steps, 0 run in a sandbox, 3 from the cache" in r.stdout, (r.stdout, r.stderr)
    assert r.stderr.count(": from the cache") == 3, r.stderr
    assert "| run-said-this" not in r.stderr, r.stderr
    assert e.record("team/full:1")["layers"] == first["layers"]
    # a copied file changed: its step and the RUN after it run again, the
    # steps before it (ADD comes after COPY, so only WORKDIR's) do not
    e.write("data.txt", "data two\n")
    r = e.build(FULL, "team/full:2", "--build-arg", "GREETING=hi")
    assert "1 run in a sandbox, 0 from the cache" in r.stdout, (r.stdout, r.stderr)
    assert "| run-said-this" in r.stderr, r.stderr
    # touching a file without changing it keeps the cache
    os.utime(os.path.join(e.ctx, "more.txt"), (1, 1))
    r = e.build(FULL, "team/full:2", "--build-arg", "GREETING=hi")
    assert "0 run in a sandbox, 3 from the cache" in r.stdout, (r.stdout, r.stderr)
    # another --build-arg value: the RUN that sees it runs again (and the
    # ENV that expands it changes the image from there on)
    r = e.build(FULL, "team/full:3", "--build-arg", "GREETING=ho")
    assert "1 run in a sandbox, 0 from the cache" in r.stdout, (r.stdout, r.stderr)
    assert "MSG=ho world" in e.images()["team/full:3"]["env"]
    # an ARG only a RUN uses: the steps before that RUN stay cached
    df = "FROM %s\nARG V=1\nCOPY data.txt /d\nRUN echo v=$V\n" % BASE
    e.build(df, "team/arg:1")
    r = e.build(df, "team/arg:2", "--build-arg", "V=2")
    assert "1 run in a sandbox, 1 from the cache" in r.stdout and "| v=2" in r.stderr, (r.stdout, r.stderr)
    # the ARG's default when no --build-arg is given
    r = e.build(FULL, "team/full:4")
    assert "1 run in a sandbox" in r.stdout and "MSG=hello world" in e.images()["team/full:4"]["env"], r.stdout
    # --no-cache runs it anyway
    r = e.build(FULL, "team/full:4", "--no-cache")
    assert "1 run in a sandbox, 0 from the cache" in r.stdout, r.stdout


def leftovers(e):
    states = []
    for root, _dirs, files in os.walk(os.path.join(e.d.var, "sandboxd", "states")):
        states += [f for f in files if f.startswith("build-")]
    return (os.listdir(os.path.join(e.store, "oci", "tmp")), states,
            [n for n in e.images() if n.startswith("llmbox-build/")])


def check_failed_run_leaves_nothing(e):
    df = "FROM %s\nCOPY data.txt /x\nRUN echo ok-so-far > /y\nRUN echo about-to-fail; exit 3\nENV A=b\n" % BASE
    r = e.build(df, "team/broken:1", check=False)
    assert r.returncode != 0, r
    assert "Dockerfile:4: step 4/5 RUN: the command failed with exit code 3" in r.stderr, r.stderr
    assert "Step 4/5 | about-to-fail" in r.stderr and "nothing was registered" in r.stderr, r.stderr
    assert "team/broken:1" not in e.images()
    assert leftovers(e) == ([], [], []), leftovers(e)


def check_copy_outside_context_refused(e):
    for src in ("../secret", "/../secret", "escape", "sub/../../secret"):
        r = e.build("FROM %s\nRUN echo must-not-run\nCOPY %s /s\n" % (BASE, src), "team/esc:1", check=False)
        assert r.returncode != 0 and "build context" in r.stderr, (src, r.stderr)
        assert "must-not-run" not in r.stderr, r.stderr  # refused before any sandbox
    r = e.build("FROM %s\nADD http://example.com/x /x\n" % BASE, "team/esc:1", check=False)
    assert r.returncode != 0 and "Dockerfile:2" in r.stderr, r.stderr
    assert "team/esc:1" not in e.images()
    assert leftovers(e) == ([], [], []), leftovers(e)


def check_run_output_streamed(e):
    df = os.path.join(e.tmp, "Dockerfile.stream")
    with open(df, "w") as f:
        f.write("FROM %s\nRUN echo first-line; sleep 6; echo last-line\n" % BASE)
    p = subprocess.Popen([BIN, "image", "build", "-f", df, "team/stream:1", e.ctx], env=e.env(),
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        line = p.stderr.readline()
        while line and " | " not in line:
            line = p.stderr.readline()
        # the first line arrived while the command still sleeps: seconds
        # before the build ends (printed at the step's end, it came last)
        t_first = time.monotonic()
        assert line.strip() == "Step 2/2 | first-line" and p.poll() is None, (line, p.poll())
        rest = p.stderr.read()
        assert p.wait(timeout=120) == 0 and "Step 2/2 | last-line" in rest, rest
        assert time.monotonic() - t_first > 3, time.monotonic() - t_first
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()


def check_from_a_registry_reference_pulls(e):
    if not shutil.which("docker-registry") or not shutil.which("skopeo"):
        raise Skip("docker-registry and skopeo are not installed (scripts/deps.sh)")
    reg = "127.0.0.1:%d" % free_port()
    conf = os.path.join(e.tmp, "registry.yml")
    with open(conf, "w") as f:
        f.write("version: 0.1\nlog:\n  level: error\nstorage:\n  filesystem:\n    rootdirectory: %s\n"
                "http:\n  addr: %s\n" % (os.path.join(e.tmp, "registry"), reg))
    proc = subprocess.Popen(["docker-registry", "serve", conf], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        for _ in range(300):
            try:
                urllib.request.urlopen("http://%s/v2/" % reg, timeout=2).read()
                break
            except Exception:
                time.sleep(0.1)
        subprocess.check_call(["skopeo", "copy", "-q", "--dest-tls-verify=false", "oci:%s:v1" % e.layout,
                               "docker://%s/team/remote:1" % reg])
        ref = "%s/team/remote:1" % reg
        assert ref not in e.images()
        r = e.build("FROM %s\nRUN echo from-the-registry > /r\n" % ref, "team/onremote:1")
        assert "pulling " + ref in r.stderr and "1 run in a sandbox" in r.stdout, (r.stdout, r.stderr)
        assert ref in e.images() and "team/onremote:1" in e.images()
    finally:
        proc.kill()
        proc.wait()


def check_network_setting_reaches_the_sandbox(e):
    # this sandboxd allows loopback only: --network nat is asked for and
    # refused by it, with its sentence; the default (none) builds
    r = e.build("FROM %s\nRUN echo net\n" % BASE, "team/net:1", "--network", "nat", check=False)
    assert r.returncode != 0 and 'network "nat" is not allowed' in r.stderr, r.stderr
    assert "team/net:1" not in e.images() and leftovers(e) == ([], [], []), leftovers(e)
    r = e.build("FROM %s\nRUN echo net\n" % BASE, "team/net:1", "--network", "none", "--no-cache")
    assert "1 run in a sandbox" in r.stdout, r.stdout


def check_kill9_mid_build_cleaned_by_the_next(e):
    df = os.path.join(e.tmp, "Dockerfile.kill")
    with open(df, "w") as f:
        f.write("FROM %s\nCOPY data.txt /x\nRUN echo started; sleep 60\n" % BASE)
    p = subprocess.Popen([BIN, "image", "build", "-f", df, "team/killed:1", e.ctx], env=e.env(),
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        seen = ""
        deadline = time.monotonic() + 60
        while "Step 3/3: RUN" not in seen and time.monotonic() < deadline:
            seen += p.stderr.readline()
        time.sleep(1.0)  # the RUN's sandbox is up: its image registered, the stage full
        assert [n for n in os.listdir(os.path.join(e.store, "oci", "refs")) if n.startswith("llmbox-build+")]
    finally:
        p.kill()
        p.wait()
    assert "team/killed:1" not in e.images()
    # the next build removes what the killed one left
    e.build("FROM %s\nENV A=1\n" % BASE, "team/after:1")
    time.sleep(0.3)
    cache = os.path.join(e.store, "oci", "build-cache")
    assert [n for n in os.listdir(cache) if n.startswith("stage-")] == [], os.listdir(cache)
    assert leftovers(e)[0::2] == ([], []), leftovers(e)


TWO_STAGES = """\
FROM team/base:1 AS build
RUN mkdir -p /out && echo built-by-stage-one > /out/tool && echo scratch > /stage-one-only
COPY links/ /out/
FROM team/base:1
COPY --from=build --chown=app:staff /out/tool /usr/local/bin/tool
COPY --from=0 --chown=app /out/tool /home/app/tool2
"""


def check_two_stages(e):
    """Stage one RUNs something that makes a file, stage two COPY --from's
    it: the result has that file, owned by the names' ids from the image's
    own /etc/passwd and /etc/group, and none of stage one's other files or
    layers; a second build takes every step from the cache."""
    os.makedirs(os.path.join(e.ctx, "links"), exist_ok=True)
    if not os.path.lexists(os.path.join(e.ctx, "links", "out")):
        os.symlink("/etc/hostname", os.path.join(e.ctx, "links", "out"))  # points out of any stage's root
    r = e.build(TWO_STAGES, "team/two:1")
    assert "built team/two:1: 6 steps, 1 run in a sandbox, 0 from the cache" in r.stdout, (r.stdout, r.stderr)
    rec, base = e.record("team/two:1"), e.record(BASE)
    # only the last stage's layers: the base's and its two COPYs
    assert rec["layers"][:len(base["layers"])] == base["layers"] and len(rec["layers"]) == len(base["layers"]) + 2, rec
    c = e.d.connect()
    sid = c.create(image="team/two:1")
    r2 = c.exec(sid, "cat /usr/local/bin/tool; stat -c %u:%g /usr/local/bin/tool /home/app/tool2; "
                     "test -e /stage-one-only && echo LEAKED; test -e /out && echo LEAKED-OUT; true")
    c.destroy(sid)
    assert r2["stdout"] == "built-by-stage-one\n1000:50\n1000:1001\n", r2
    assert not [n for n in e.images() if n.startswith("llmbox-build/")], e.images().keys()
    # --from= an image of the store (a reference: it has a tag)
    e.build("FROM %s\nCOPY --from=%s /etc/group /copied-group\n" % (BASE, BASE), "team/fromimg:1")
    c = e.d.connect()
    sid = c.create(image="team/fromimg:1")
    r3 = c.exec(sid, "cat /copied-group")
    c.destroy(sid)
    assert r3["stdout"].startswith("root:x:0:") and "app:x:1001:" in r3["stdout"], r3
    # the cache works per stage: nothing runs again
    r = e.build(TWO_STAGES, "team/two:2")
    assert "6 steps, 0 run in a sandbox, 4 from the cache" in r.stdout, (r.stdout, r.stderr)
    assert e.record("team/two:2")["layers"] == rec["layers"]


def check_copy_from_refusals(e):
    """A --from source that is a symlink out of the stage's root is refused,
    not followed; a --chown name the image lacks, and one read through a
    symlinked /etc/passwd, are refused; nothing is registered."""
    df = "FROM %s AS build\nCOPY links/ /out/\nFROM %s\nCOPY --from=build /out/out /x\n" % (BASE, BASE)
    r = e.build(df, "team/bad:1", check=False)
    assert r.returncode != 0 and "Dockerfile:4: step 4/4 COPY: --from=build:" in r.stderr, r.stderr
    assert "outside" in r.stderr, r.stderr
    r = e.build("FROM %s\nCOPY --chown=nosuchuser data.txt /d\n" % BASE, "team/bad:1", check=False)
    assert r.returncode != 0 and 'the user "nosuchuser" is not in the image\'s /etc/passwd' in r.stderr, r.stderr
    # the image's /etc/passwd made a symlink (to a file that has "app"): not followed
    os.makedirs(os.path.join(e.ctx, "pwlink"), exist_ok=True)
    with open(os.path.join(e.ctx, "pwlink", "passwd.real"), "w") as f:
        f.write("app:x:1000:1001::/home/app:/bin/sh\n")
    if not os.path.lexists(os.path.join(e.ctx, "pwlink", "passwd")):
        os.symlink("passwd.real", os.path.join(e.ctx, "pwlink", "passwd"))
    r = e.build("FROM %s\nCOPY pwlink/ /etc/\nCOPY --chown=app data.txt /d\n" % BASE, "team/bad:1", check=False)
    assert r.returncode != 0 and "Dockerfile:3:" in r.stderr and "/etc/passwd" in r.stderr, r.stderr
    assert "team/bad:1" not in e.images()
    assert leftovers(e) == ([], [], []), leftovers(e)


def main():
    rep = Reporter("image_build/")
    if os.geteuid() != 0:
        print("SKIP image_build: needs root")
        return 0
    if not shutil.which("umoci"):
        print("SKIP image_build: umoci is not installed (scripts/deps.sh)")
        return 0
    e = Env()
    try:
        root = tiny_rootfs(os.path.join(e.tmp, "rootfs"))
        lay = umoci_image(e.tmp, root, env=["PATH=/usr/bin:/bin"], tag="v1")
        e.layout = lay
        e.llmbox("import", lay, BASE)
        with Daemon(env={"LLMBOX_IMAGE_STORE": e.store, "LLMBOX_POOL_SIZE": "0"}) as d:
            e.d = d
            rep.run("every_instruction_and_a_sandbox_of_the_result", check_every_instruction, e)
            rep.run("cache_second_build_runs_no_step", check_cache, e)
            rep.run("failed_run_leaves_no_image", check_failed_run_leaves_nothing, e)
            rep.run("copy_outside_the_context_refused", check_copy_outside_context_refused, e)
            rep.run("run_output_streamed_while_the_step_runs", check_run_output_streamed, e)
            rep.run("from_a_registry_reference_pulls_it_first", check_from_a_registry_reference_pulls, e)
            rep.run("network_setting_reaches_the_sandbox", check_network_setting_reaches_the_sandbox, e)
            rep.run("kill9_mid_build_cleaned_by_the_next_build", check_kill9_mid_build_cleaned_by_the_next, e)
            rep.run("two_stages_copy_from_and_chown_by_name", check_two_stages, e)
            rep.run("copy_from_link_out_and_chown_names_refused", check_copy_from_refusals, e)
    finally:
        e.close()
    return rep.exit_code()


if __name__ == "__main__":
    sys.exit(main())
