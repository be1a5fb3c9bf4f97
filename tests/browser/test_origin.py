"""Starts `llmbox web` and nginx without users (the harness of
tests/integration/test_web.py: no sandbox, no model) with one finished task
whose output holds an html page and an svg whose scripts try to start
tasks, and runs origin_e2e.mjs in headless Chromium against it: another
origin's page, DNS rebinding and the generated files must not start or
read a task. About 15 s.
"""
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "integration"))
import test_web  # noqa: E402
from test_tasks_files import finished_task_with_outputs  # noqa: E402

# Each tries the ways a script has: a fetch with a FormData body (the
# preview frame's origin is opaque, so the browser sends Origin: null), a
# no-cors fetch, and a form (which the CSP sandbox's missing allow-forms
# blocks in any case).
ATTACK = """
const go = (how) => { const fd = new FormData(); fd.append('prompt', 'from-artifact-' + how);
  return fd; };
fetch('/api/tasks', { method: 'POST', body: go('fetch') }).catch(() => {});
fetch('/api/tasks', { method: 'POST', mode: 'no-cors', body: go('nocors') }).catch(() => {});
"""
EVIL_HTML = ("<!doctype html><title>report</title><p>A report.</p>"
             "<form id=f method=post action=/api/tasks enctype=multipart/form-data>"
             "<input name=prompt value=from-artifact-form></form>"
             "<script>%s\ntry { document.getElementById('f').submit(); } catch (e) {}</script>" % ATTACK)
EVIL_SVG = ('<svg xmlns="http://www.w3.org/2000/svg" width="40" height="40"><rect width="40" height="40" '
            'fill="teal"/><script><![CDATA[%s]]></script></svg>' % ATTACK)


def main():
    E = test_web.Env()
    E.start()
    try:
        tid, _ = finished_task_with_outputs(E, {"evil.html": EVIL_HTML.encode(), "evil.svg": EVIL_SVG.encode()})
        for name, mime in (("evil.html", "text/html"), ("evil.svg", "image/svg+xml")):
            E.db.execute("UPDATE artifacts SET mime=? WHERE task_id=? AND path=?", (mime, tid, name))
        env = dict(os.environ, LLMBOX_TEST_TASK=tid, LLMBOX_TEST_WEB_LOG=os.path.join(E.prefix, "var", "log", "web.out"))
        r = subprocess.run(["node", os.path.join(HERE, "origin_e2e.mjs"), "http://127.0.0.1:%d/" % E.port],
                           cwd=HERE, timeout=180, env=env)
        if r.returncode:
            print(E.logs()[-6000:], file=sys.stderr)
        return r.returncode
    finally:
        E.stop()


if __name__ == "__main__":
    sys.exit(main())
