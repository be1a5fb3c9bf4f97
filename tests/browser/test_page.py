"""Starts the real stack with a scripted fake model and runs page_e2e.mjs in
headless Chromium against it.

The default conversation is the demo scenario (a chart, a tone, an html
report, a CSV in a folder, a clip) plus two steps: an html page that probes
its sandbox (can it read the parent page, the cookies, storage?) and a PDF
in a folder. Tasks whose prompt holds a tag follow their own script:
  [long]     one `sleep 100`: for Stop
  [slow]     four slow turns: for reloading mid-task
  [archive]  lists /testbed/input: for an uploaded archive
Screenshots go to tests/browser/screenshots/ (SHOTS overrides).
"""
import copy
import json
import os
import shutil
import subprocess
import sys
import tempfile
import zipfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "lib"))
from stack import LLMBOX, Stack, image_ready  # noqa: E402

PROBE_HTML = """<!doctype html>
<meta charset="utf-8"><title>probe</title>
<h1>Sandbox probe</h1><p id="r">script did not run</p>
<script>
const out = [];
try { out.push('parent:' + parent.document.title); } catch (e) { out.push('parent:blocked'); }
try { out.push('cookie:' + document.cookie); } catch (e) { out.push('cookie:blocked'); }
try { out.push('storage:' + localStorage.length); } catch (e) { out.push('storage:blocked'); }
document.getElementById('r').textContent = out.join(' ');
</script>
"""

PDF = ("mkdir -p /testbed/output/docs && python3 -c \"import matplotlib; matplotlib.use('Agg'); "
       "import matplotlib.pyplot as plt; plt.plot([1, 3, 2]); plt.savefig('/testbed/output/docs/plot.pdf')\" "
       "&& ls -la /testbed/output/docs")


def scenario():
    demo = json.load(open(os.path.join(HERE, "..", "fixtures", "demo_scenario.json")))
    steps = copy.deepcopy(demo["steps"])
    extra = [
        {"content": "A page that checks what it can reach.",
         "tool_calls": [{"name": "file_editor", "arguments": {"command": "create", "path": "/testbed/output/probe.html",
                                                              "file_text": PROBE_HTML}}]},
        {"content": "And a PDF in a folder.", "tool_calls": [{"name": "bash", "arguments": {"command": PDF}}]},
    ]
    steps[3:3] = extra  # before the answer and finish steps
    for st in steps:
        st["delay_ms"] = 400
        st.setdefault("usage", {"prompt_tokens": 1200, "completion_tokens": 80})
    slow = [{"content": "Step %d." % i, "delay_ms": 1500,
             "tool_calls": [{"name": "bash", "arguments": {"command": "echo step-%d" % i}}]} for i in (1, 2, 3, 4)]
    return {
        "steps": steps,
        "scenarios": [
            {"match": "[long]", "steps": [
                {"content": "This takes a while.", "delay_ms": 200,
                 "tool_calls": [{"name": "bash", "arguments": {"command": "sleep 100"}}]}]},
            {"match": "[slow]", "steps": slow},
            {"match": "[archive]", "steps": [
                {"content": "The inputs:", "delay_ms": 200,
                 "tool_calls": [{"name": "bash", "arguments": {"command": "cd /testbed/input && find . -type f | sort"}}]}]},
        ],
    }


# The login run: a page whose picture sits next to it (a relative link,
# loaded from the sandboxed preview through the task's preview key).
LOGIN_MAKE = ("printf '%s' '<!doctype html><title>p</title><img src=\"dot.svg\" alt=\"dot\">' "
              "> /testbed/output/page.html && printf '%s' '<svg xmlns=\"http://www.w3.org/2000/svg\" "
              "width=\"8\" height=\"8\"><rect width=\"8\" height=\"8\" fill=\"teal\"/></svg>' "
              "> /testbed/output/dot.svg")
LOGIN_SCENARIO = {"steps": [], "scenarios": [{"match": "[login]", "steps": [
    {"content": "A page.", "tool_calls": [{"name": "bash", "arguments": {"command": LOGIN_MAKE}}]}]}]}


def new_user(name):
    out = subprocess.check_output([LLMBOX, "user", "add", name], text=True,
                                  env={"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "LLMBOX_CONF": "/dev/null"})
    tok = [ln.strip() for ln in out.splitlines() if ln.strip().startswith("lbx_")][0]
    hsh = [ln.split("=", 1)[1].strip() for ln in out.splitlines() if ln.startswith("token_sha256 =")][0]
    return tok, hsh


def login_run(shots):
    """The login form against a stack with two users (about 10 s)."""
    (ta, ha), (tb, hb) = new_user("alice"), new_user("bob")
    conf = '[user "alice"]\ntoken_sha256 = %s\n[user "bob"]\ntoken_sha256 = %s\n' % (ha, hb)
    with Stack(LOGIN_SCENARIO, conf=conf) as s:
        env = dict(os.environ, SHOTS=shots, LLMBOX_TEST_TOKEN_A=ta, LLMBOX_TEST_TOKEN_B=tb)
        r = subprocess.run(["node", os.path.join(HERE, "login_e2e.mjs"), "http://127.0.0.1:%d/" % s.port],
                           cwd=HERE, timeout=180, env=env)
    return r.returncode


def main():
    if not image_ready():
        print("SKIP browser: the sandbox image is not built")
        return 0
    shots = os.environ.get("SHOTS") or os.path.join(HERE, "screenshots")
    os.makedirs(shots, exist_ok=True)
    tmp = tempfile.mkdtemp(prefix="llmbox-browser-")
    good, evil = os.path.join(tmp, "pack.zip"), os.path.join(tmp, "evil.zip")
    with zipfile.ZipFile(good, "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr("pack/a.txt", "alpha\n")
        z.writestr("pack/sub/b.csv", "x,y\n1,2\n")
    with zipfile.ZipFile(evil, "w") as z:
        z.writestr("../../escape.txt", "out of the input folder\n")
    # every event stream ends after 3 s, so live updates keep crossing
    # reconnects (Last-Event-ID) as they would behind a rebalancing proxy
    with Stack(scenario(), env={"LLMBOX_SSE_MAX_S": "3"}) as s:
        env = dict(os.environ, SHOTS=shots, LLMBOX_TEST_ZIP=good, LLMBOX_TEST_EVIL_ZIP=evil,
                   LLMBOX_TEST_DB=os.path.join(s.prefix, "var", "web", "llmbox.db"))
        r = subprocess.run(["node", os.path.join(HERE, "page_e2e.mjs"), "http://127.0.0.1:%d/" % s.port],
                           cwd=HERE, timeout=420, env=env)
    shutil.rmtree(tmp, ignore_errors=True)
    rc_login = login_run(shots)
    return r.returncode or rc_login


if __name__ == "__main__":
    sys.exit(main())
