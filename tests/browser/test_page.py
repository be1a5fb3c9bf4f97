"""Starts the real stack with the demo scenario (the fake model waits 400 ms
per reply so the turns arrive live) and runs page_e2e.mjs in headless
Chromium against it."""
import json
import os
import shutil
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "lib"))
from stack import Stack, image_ready  # noqa: E402


def main():
    if not image_ready():
        print("SKIP browser: the sandbox image is not built")
        return 0
    scen = json.load(open(os.path.join(HERE, "..", "fixtures", "demo_scenario.json")))
    for st in scen["steps"]:
        st["delay_ms"] = 400
    with Stack(scen) as s:
        r = subprocess.run(["node", os.path.join(HERE, "page_e2e.mjs"), "http://127.0.0.1:%d/" % s.port],
                           cwd=HERE, timeout=180)
        return r.returncode


if __name__ == "__main__":
    sys.exit(main())
