"""Starts the real llmbox stack for a test: fake model, sandboxd, web, nginx.

Everything lives in a fresh temporary prefix (its own var/ and artifacts/),
shares the repository's built binary, plugins, prompts and sandbox image, and
listens on free loopback ports. Python stdlib only.
"""
import http.client
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import uuid

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
# BUILD: another build dir (make check-asan runs the suites on build-asan)
LLMBOX = os.path.join(REPO, os.environ.get("BUILD", "build"), "llmbox")


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def image_ready():
    return os.path.exists(os.path.join(REPO, "var", "images", "default", ".complete"))


class Reporter:
    """Prints PASS/FAIL/SKIP lines the way tests/run.sh counts them."""

    def __init__(self):
        self.failed = 0

    def run(self, name, fn, *args):
        t0 = time.time()
        try:
            fn(*args)
            print("PASS %s (%.1fs)" % (name, time.time() - t0), flush=True)
        except Skip as e:
            print("SKIP %s: %s" % (name, e), flush=True)
        except Exception as e:  # a failed assert or anything unexpected
            self.failed += 1
            print("FAIL %s: %s: %s" % (name, type(e).__name__, e), flush=True)
            import traceback
            traceback.print_exc(file=sys.stderr)

    def done(self):
        sys.exit(1 if self.failed else 0)


class Skip(Exception):
    pass


def multipart(fields, files):
    """fields: {name: str}; files: [(field, filename, bytes)] -> (ctype, body)."""
    boundary = "----llmboxtest" + uuid.uuid4().hex
    out = bytearray()
    for k, v in fields.items():
        out += ("--%s\r\nContent-Disposition: form-data; name=\"%s\"\r\n\r\n" % (boundary, k)).encode()
        out += str(v).encode() + b"\r\n"
    for field, name, data in files:
        out += ("--%s\r\nContent-Disposition: form-data; name=\"%s\"; filename=\"%s\"\r\n"
                "Content-Type: application/octet-stream\r\n\r\n" % (boundary, field, name)).encode()
        out += data + b"\r\n"
    out += ("--%s--\r\n" % boundary).encode()
    return "multipart/form-data; boundary=" + boundary, bytes(out)


def json_call(target, method, path, body=None, headers=None, timeout=60):
    """A request through anything with Stack.request's signature (a stack,
    a balancer): a dict or list body is sent as JSON; -> (status, headers
    with lower-case names, the body as JSON, or as bytes when it is not)."""
    h = dict(headers or {})
    if isinstance(body, (dict, list)):
        body = json.dumps(body).encode()
        h.setdefault("Content-Type", "application/json")
    st, hd, data = target.request(method, path, body, h, timeout=timeout)
    hd = {k.lower(): v for k, v in (hd.items() if isinstance(hd, dict) else hd)}
    try:
        return st, hd, json.loads(data) if data else None
    except ValueError:
        return st, hd, data


def pg_fresh_db(url):
    """A new, empty database on the PostgreSQL server of url (a
    postgresql:// URL, e.g. tests/lib/pg_server.py's); its URL. With
    LLMBOX_TEST_PG_URL set, every Stack gets one: any suite then runs on
    PostgreSQL (several nodes), e.g.
        LLMBOX_TEST_PG_URL=postgresql://llmbox@/llmbox?host=/tmp/llmbox-pg-x/sock \\
            python3 tests/integration/test_rollouts.py
    (a suite that reads var/web/llmbox.db itself fails there)."""
    from urllib.parse import urlsplit, urlunsplit
    name = "t" + uuid.uuid4().hex[:16]
    subprocess.run(["psql", "-v", "ON_ERROR_STOP=1", "-Atc", 'CREATE DATABASE "%s"' % name, url],
                   check=True, capture_output=True)
    u = urlsplit(url)
    return urlunsplit((u.scheme, u.netloc, "/" + name, u.query, u.fragment))


class Stack:
    def __init__(self, scenario=None, env=None, model=True, nginx_body_mb=100, web_env=None, conf=None,
                 nginx_subst=(), model_args=(), model_log=True, prepare=None, tls=None, db_url=None):
        """env: extra environment for every process; web_env: for `llmbox web`
        only (e.g. LLMBOX_SANDBOX_API_TOKEN, which nothing else should see).
        conf: the text of an llmbox.conf, written to the prefix (LLMBOX_HOME)
        once the fake model runs; "{model_url}" in it becomes its base URL.
        nginx_subst: (old, new) replacements in nginx.conf (each must match).
        model_args: more arguments for tests/fake_model.py (e.g.
        ["--delay-ms", "200"]); model_log=False: no request bodies in
        model-log/ (thousands of them cost the load tests time).
        prepare: called with the prefix once its folders exist and before
        any llmbox process starts (e.g. to mount a small disk on them).
        tls (E2B's protocol, E2B_DOMAIN host names): {"listen": "ADDR:PORT",
        "cert": path, "key": path, "names": "*.e2b.test"}: the server block
        also listens there with TLS and takes those names, as docs/E2B.md
        tells an operator to do.
        db_url: the store in that PostgreSQL database (LLMBOX_DB_URL, issue
        13; tests/lib/pg_server.py) instead of SQLite in the prefix."""
        self.scenario = scenario
        self.model_args = list(model_args)
        self.model_log_on = model_log
        self.conf = conf
        self.prepare = prepare
        self.named = {}  # "sandboxd", "web", "nginx" -> (Popen, argv, log name, env)
        self.extra_env = dict(env or {})
        if not db_url and os.environ.get("LLMBOX_TEST_PG_URL"):
            db_url = pg_fresh_db(os.environ["LLMBOX_TEST_PG_URL"])
        if db_url:
            self.extra_env["LLMBOX_DB_URL"] = db_url
        self.web_env = web_env or {}
        self.want_model = model
        self.nginx_body_mb = nginx_body_mb
        self.nginx_subst = nginx_subst
        self.tls = tls
        self.procs = []
        self.prefix = None

    # ---- lifecycle -------------------------------------------------------
    def start(self):
        self.prefix = tempfile.mkdtemp(prefix="llmbox-test-")
        os.chmod(self.prefix, 0o755)
        p = self.prefix
        os.symlink(os.path.join(REPO, "web"), os.path.join(p, "web"))
        self.port = free_port()
        conf = open(os.path.join(REPO, "nginx.conf")).read()
        conf = conf.replace("listen 127.0.0.1:8080", "listen 127.0.0.1:%d" % self.port)
        conf = conf.replace("client_max_body_size 100m", "client_max_body_size %dm" % self.nginx_body_mb)
        for old, new in self.nginx_subst:
            assert old in conf, "nginx.conf has no %r" % old
            conf = conf.replace(old, new)
        if self.tls:  # E2B's protocol: docs/E2B.md's TLS lines, in the one server block
            listen = "listen 127.0.0.1:%d;" % self.port
            assert listen in conf and "server_name localhost;" in conf
            conf = conf.replace(listen, "%s\n        listen %s ssl;\n        ssl_certificate %s;\n"
                                "        ssl_certificate_key %s;" % (listen, self.tls["listen"], self.tls["cert"],
                                                                    self.tls["key"]), 1)
            conf = conf.replace("server_name localhost;", "server_name localhost %s;" % self.tls["names"], 1)
        subprocess.check_call([os.path.join(REPO, "scripts", "prepare-dirs.sh"), "llmbox"], cwd=p)
        # next to the nginx-local.conf it includes, as scripts/nginx-conf.sh does
        self.nginx_conf = os.path.join(p, "var", "run", "nginx.conf")
        with open(self.nginx_conf, "w") as f:
            f.write(conf)
        if self.prepare:
            self.prepare(p)

        self.model_port = None
        if self.want_model:
            self.model_log = os.path.join(p, "model-log")
            os.makedirs(self.model_log)
            scen = os.path.join(p, "scenario.json")
            with open(scen, "w") as f:
                json.dump(self.scenario or [], f)
            argv = [sys.executable, os.path.join(REPO, "tests", "fake_model.py"), "--port", "0", "--scenario", scen]
            argv += (["--log-dir", self.model_log] if self.model_log_on else []) + self.model_args
            mp = subprocess.Popen(argv,
                                  stdout=subprocess.PIPE, stderr=open(os.path.join(p, "var/log/model.log"), "w"),
                                  text=True)
            self.procs.append(mp)
            line = mp.stdout.readline()
            self.model_port = int(line.strip().split()[-1])
        llm_url = "http://127.0.0.1:%d/v1" % (self.model_port or free_port())
        self.model_url = llm_url
        if self.conf is not None:
            with open(os.path.join(p, "llmbox.conf"), "w") as f:
                f.write(self.conf.replace("{model_url}", llm_url).replace("{model_port}", str(self.model_port)))

        self.env = dict(os.environ)
        self.env.update({
            "LLMBOX_HOME": p,
            "LLMBOX_PLUGINS": os.path.join(REPO, "plugins"),
            "LLMBOX_PROMPTS": os.path.join(REPO, "server", "agent", "prompts"),
            "LLMBOX_IMAGES": os.path.join(REPO, "images"),
            "LLMBOX_IMAGE_STORE": os.path.join(REPO, "var", "images"),
            "LLMBOX_WEB_USER": "llmbox",
            "LLMBOX_LLM_URL": llm_url,
            "LLMBOX_LLM_MODEL": "fake-model",
            # follow-ups keep a task's sandbox after it ends; the
            # suites that check nothing is left behind expect the old way:
            # a test of follow-ups asks for a keep time in env
            "LLMBOX_FOLLOWUP_KEEP_S": "0",
        })
        for k in ("OPENAI_BASE_URL", "OPENAI_API_KEY", "LLMBOX_LLM_KEY"):
            self.env.pop(k, None)
        self.env.update(self.extra_env)
        self._spawn_named("sandboxd", [LLMBOX, "sandboxd"], "sandboxd.log")
        self._spawn_named("web", [LLMBOX, "web"], "web.log", dict(self.env, **self.web_env))
        self._spawn_named("nginx", ["nginx", "-p", p + "/", "-c", self.nginx_conf,
                                    "-e", "var/log/nginx-error.log"], "nginx.out")
        self.wait_healthy()
        return self

    def wait_healthy(self, timeout=20, sandboxd=True):
        """Until /api/health answers through nginx (and says sandboxd is
        ok, unless sandboxd=False)."""
        deadline = time.time() + timeout
        while time.time() < deadline:
            try:
                st, _, body = self.request("GET", "/api/health")
                if st == 200 and (not sandboxd or json.loads(body).get("sandboxd", {}).get("ok")):
                    return self
            except (OSError, ValueError):
                pass
            for name, (pr, _, _, _) in self.named.items():
                if pr.poll() is not None and (sandboxd or name != "sandboxd"):
                    raise RuntimeError("a stack process exited at start: %s\n%s" % (pr.args, self.logs()))
            time.sleep(0.1)
        raise RuntimeError("the stack did not become healthy in %d s\n%s" % (timeout, self.logs()))

    def _spawn(self, argv, out, env=None):
        pr = subprocess.Popen(argv, cwd=self.prefix, env=env or self.env, stdout=out, stderr=subprocess.STDOUT)
        self.procs.append(pr)
        return pr

    def _spawn_named(self, name, argv, logname, env=None):
        out = open(os.path.join(self.prefix, "var", "log", logname), "a")
        pr = self._spawn(argv, out, env)
        out.close()  # the child has its own copy
        self.named[name] = (pr, argv, logname, env)
        return pr

    # ---- faults: kill and restart one process the way make run starts it --
    def pid(self, name):
        """The pid of "sandboxd", "web" or "nginx" (the nginx master)."""
        return self.named[name][0].pid

    def kill(self, name, sig=signal.SIGKILL, wait=True):
        pr = self.named[name][0]
        if pr.poll() is None:
            pr.send_signal(sig)
        if wait:
            pr.wait(timeout=30)

    def restart(self, name, wait=True):
        """Starts name again with the same command, environment and log
        (after kill(); scripts/run.sh would do the same)."""
        pr, argv, logname, env = self.named[name]
        if pr.poll() is None:
            raise RuntimeError("%s is still running" % name)
        self._spawn_named(name, argv, logname, env)
        if wait:
            self.wait_healthy(sandboxd=self.named["sandboxd"][0].poll() is None)

    def logs(self):
        out = []
        d = os.path.join(self.prefix, "var", "log")
        for root, _, files in os.walk(os.path.join(self.prefix, "var")):
            for n in files:
                if n.endswith(".log") or n.endswith(".out"):
                    try:
                        txt = open(os.path.join(root, n), errors="replace").read()[-3000:]
                    except OSError:
                        continue
                    out.append("--- %s\n%s" % (os.path.relpath(os.path.join(root, n), self.prefix), txt))
        return "\n".join(out)

    def stop(self):
        for pr in reversed(self.procs):
            if pr.poll() is None:
                pr.send_signal(signal.SIGTERM)
        for pr in reversed(self.procs):
            try:
                pr.wait(timeout=10)
            except subprocess.TimeoutExpired:
                pr.kill()
                pr.wait()
        self._kill_strays()
        if os.environ.get("LLMBOX_KEEP_TEST_DIRS"):
            print("kept %s" % self.prefix, file=sys.stderr)
        elif self.prefix:
            shutil.rmtree(self.prefix, ignore_errors=True)

    def _kill_strays(self):
        """Kills what outlived the stack in its prefix: nginx workers whose
        master a test killed with -9, agents of a web killed the same way
        (all of them run with the prefix as working directory)."""
        if not self.prefix:
            return
        strays = []
        for d in os.listdir("/proc"):
            if not d.isdigit() or int(d) == os.getpid():
                continue
            try:
                cwd = os.readlink("/proc/%s/cwd" % d)
            except OSError:
                continue
            cwd = cwd[:-len(" (deleted)")] if cwd.endswith(" (deleted)") else cwd
            if cwd == self.prefix or cwd.startswith(self.prefix + "/"):
                try:
                    os.kill(int(d), signal.SIGKILL)
                    strays.append(int(d))
                except OSError:
                    pass
        if strays:
            print("stack: killed %d process(es) left in %s: %r" % (len(strays), self.prefix, strays), file=sys.stderr)

    def __enter__(self):
        try:
            return self.start()
        except Exception:
            print(self.logs() if self.prefix else "", file=sys.stderr)
            self.stop()
            raise

    def __exit__(self, *exc):
        if exc[0] is not None:
            print(self.logs(), file=sys.stderr)
        self.stop()

    # ---- HTTP --------------------------------------------------------------
    def request(self, method, path, body=None, headers=None, timeout=30):
        c = http.client.HTTPConnection("127.0.0.1", self.port, timeout=timeout)
        try:
            c.request(method, path, body=body, headers=headers or {})
            r = c.getresponse()
            return r.status, {k.lower(): v for k, v in r.getheaders()}, r.read()
        finally:
            c.close()

    def get_json(self, path):
        st, _, body = self.request("GET", path)
        return st, json.loads(body) if body else None

    def create_task(self, prompt, files=(), **fields):
        f = {"prompt": prompt}
        f.update(fields)
        ctype, body = multipart(f, [("files", n, d) for n, d in files])
        st, _, resp = self.request("POST", "/api/tasks", body, {"Content-Type": ctype})
        return st, json.loads(resp) if resp else None

    def wait_task(self, task_id, timeout=120, final=("succeeded", "failed", "cancelled")):
        deadline = time.time() + timeout
        while time.time() < deadline:
            st, t = self.get_json("/api/tasks/" + task_id)
            if st == 200 and t["status"] in final:
                return t
            time.sleep(0.1)
        raise AssertionError("task %s not final after %ss: %s" % (task_id, timeout, t))

    def events(self, task_id, last_event_id=None, timeout=60):
        """Reads the SSE stream to its end; returns [(id, event, data)]."""
        h = {"Accept": "text/event-stream"}
        if last_event_id is not None:
            h["Last-Event-ID"] = str(last_event_id)
        c = http.client.HTTPConnection("127.0.0.1", self.port, timeout=timeout)
        c.request("GET", "/api/tasks/%s/events" % task_id, headers=h)
        r = c.getresponse()
        assert r.status == 200, r.status
        assert r.getheader("Content-Type", "").startswith("text/event-stream")
        evs, cur = [], {}
        while True:
            line = r.readline()  # not r.fp: a big event spans chunks of the chunked body
            if not line:
                break
            line = line.decode().rstrip("\r\n")
            if line == "":
                if "event" in cur or "data" in cur:
                    evs.append((int(cur.get("id", "0")), cur.get("event", "message"), json.loads(cur.get("data", "null"))))
                    if cur.get("event") == "done":
                        break
                cur = {}
            elif line.startswith(":"):
                continue
            else:
                k, _, v = line.partition(":")
                v = v[1:] if v.startswith(" ") else v
                cur[k] = cur[k] + "\n" + v if k == "data" and k in cur else v
        c.close()
        return evs

    def sandboxd_ping(self):
        """sandboxd's ping answer (a dict), straight over its unix socket."""
        import struct
        c = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        c.settimeout(10)
        try:
            c.connect(os.path.join(self.prefix, "var", "run", "sandboxd.sock"))
            req = b'{"op":"ping"}'
            c.sendall(struct.pack(">I", len(req)) + req)
            buf = b""
            while len(buf) < 4 or len(buf) < 4 + struct.unpack(">I", buf[:4])[0]:
                chunk = c.recv(65536)
                if not chunk:
                    raise EOFError("sandboxd closed the connection")
                buf += chunk
            return json.loads(buf[4:4 + struct.unpack(">I", buf[:4])[0]])
        finally:
            c.close()

    def sandbox_leftovers(self):
        """Sandboxes still in use, or scratch dirs under var/sandboxes beyond
        those of the warm pool's ready sandboxes (which belong to no task)."""
        d = os.path.join(self.prefix, "var", "sandboxes")
        ls = lambda: set(os.listdir(d)) if os.path.isdir(d) else set()
        before = ls()
        info = self.sandboxd_ping()
        # a refill between the two listings adds a dir to the second only
        dirs = sorted(before & ls())
        pool = info.get("pool") or {}
        # a sandbox being made for the pool has its dir already (sandboxd's workers)
        ready = pool.get("ready", 0) + pool.get("making", 0)
        if info.get("sandboxes", 0) or len(dirs) > ready:
            return ["%d sandbox(es) in use, %d pooled" % (info.get("sandboxes", 0), ready)] + dirs
        return []
