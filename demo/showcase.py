#!/usr/bin/env python3
"""The paper's four showcase tasks, end to end through the real service.

    make demo                  # or: python3 demo/showcase.py [--no-wait] [--out DIR]

Starts llmbox (sandboxd, web, nginx on a free loopback port) with a SCRIPTED
model: tests/fake_model.py plays the trajectories below, so no LLM is needed
and every run is the same. Everything else is real: the agent loop, the
sandbox, the tools, the image's Leaflet, CairoSVG, ffmpeg, MIDIUtil and
FluidSynth, artifact collection and downloads. The tasks say "(scripted demo)"
in their prompts and the model is named "scripted-showcase", so nobody
mistakes them for a model's work.

The outputs are downloaded to demo/out/ (or --out) and checked for real:
the poster PNG's size, the HTML's inlined Leaflet and script, and, by a fifth
scripted task so the host needs no ffmpeg or sox, the video's duration and
frame rate with ffprobe and the WAV's length and loudness with sox. Then the
service keeps running so the tasks can be looked at in the page, until Ctrl-C
(--no-wait: stop at once; what the test does).
"""
import argparse
import json
import os
import struct
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "lib"))
from stack import Stack, image_ready  # noqa: E402

SCRIPTS = os.path.join(HERE, "scripts")
MODEL = "scripted-showcase"


def script(name):
    return open(os.path.join(SCRIPTS, name), encoding="utf-8").read()


def step(content, tool, args):
    return {"content": content, "tool_calls": [{"name": tool, "arguments": args}]}


def showcase_task(tag, prompt, look, script_name, answer):
    """Look around, write the script with file_editor, run it, finish."""
    path = "/testbed/" + script_name
    return {
        "tag": tag,
        "prompt": "[%s] (scripted demo) %s" % (tag, prompt),
        "steps": [
            step("Let me check what the sandbox offers for this.", "bash", {"command": look}),
            step("I'll write the script.", "file_editor",
                 {"command": "create", "path": path, "file_text": script(script_name)}),
            step("Now run it.", "bash", {"command": "cd /testbed && python3 %s && ls -la output" % script_name}),
            step("Done.", "finish", {"answer": answer}),
        ],
    }


TASKS = [
    showcase_task("tokyo", "Plan a 3-day Tokyo itinerary and show it as an interactive map (map.html).",
                  "ls /usr/share/javascript/leaflet/ && python3 -c 'import json; print(json.__name__)'",
                  "tokyo_map.py",
                  "map.html shows 12 stops over 3 days with a route per day; click a day to zoom to it."),
    showcase_task("poster", "Make a conference poster from the JSON file (poster.svg and poster.png).",
                  "cat /testbed/input/poster.json | head -c 400; python3 -c 'import svgwrite, cairosvg'",
                  "poster.py",
                  "poster.svg and a 1200x1700 poster.png with title, four sections and key numbers."),
    showcase_task("countdown", "Create an animated birthday countdown video (about 11 s at 30 fps).",
                  "ffmpeg -hide_banner -encoders 2>/dev/null | grep -m1 libx264; ls /usr/share/fonts/truetype/dejavu/ | head -3",
                  "countdown.py",
                  "countdown.mp4: a 10-to-0 countdown, then confetti and Happy Birthday!, 11 s at 30 fps."),
    showcase_task("piano", "Compose a calm piano piece in A minor (composition.mid and a preview.wav).",
                  "ls /usr/share/sounds/sf2/ && fluidsynth --version | head -1",
                  "piano.py",
                  "composition.mid (Am-F-C-G, slow arpeggios under a simple melody) and preview.wav."),
]

CHECK = showcase_task("check", "Measure the showcase media with ffprobe and sox.",
                      "ls -la /testbed/input", "check_media.py", "checks.json written.")


def png_size(data):
    if data[:8] != b"\x89PNG\r\n\x1a\n" or data[12:16] != b"IHDR":
        return None
    return struct.unpack(">II", data[16:24])


class Demo:
    def __init__(self, out_dir, log=print):
        self.out_dir = out_dir
        self.log = log
        self.stack = None
        self.results = []   # (name, ok, detail)

    def scenario(self):
        return {"scenarios": [{"match": "[%s]" % t["tag"], "steps": t["steps"]} for t in TASKS + [CHECK]],
                "steps": []}

    def start(self):
        # a generous soft timeout: the scripted model does not wait for
        # long-running commands the way a real one would
        env = {"LLMBOX_LLM_MODEL": MODEL, "LLMBOX_BASH_SOFT_TIMEOUT_S": "300",
               "LLMBOX_CMD_TIMEOUT_S": "300"}
        self.stack = Stack(scenario=self.scenario(), env=env).__enter__()
        return self

    def stop(self):
        if self.stack:
            self.stack.__exit__(None, None, None)

    def check(self, name, ok, detail=""):
        self.results.append((name, bool(ok), detail))

    def run_task(self, t, files=()):
        st, body = self.stack.create_task(t["prompt"], files=files)
        if st not in (200, 201, 202):
            raise RuntimeError("creating %s: HTTP %s %s" % (t["tag"], st, body))
        return body["id"]

    def download(self, tid, tag):
        st, arts = self.stack.get_json("/api/tasks/%s/artifacts" % tid)
        got = {}
        d = os.path.join(self.out_dir, tag)
        os.makedirs(d, exist_ok=True)
        for a in (arts or {}).get("artifacts", arts or []):
            path = a["path"]
            st, _, data = self.stack.request("GET", "/api/tasks/%s/artifacts/%s" % (tid, path), timeout=60)
            if st != 200:
                continue
            got[path] = data
            dst = os.path.join(d, os.path.basename(path))
            with open(dst + ".tmp", "wb") as f:
                f.write(data)
            os.replace(dst + ".tmp", dst)
        return got

    def run(self):
        poster_json = open(os.path.join(HERE, "inputs", "poster.json"), "rb").read()
        ids = {}
        for t in TASKS:
            files = [("poster.json", poster_json)] if t["tag"] == "poster" else ()
            ids[t["tag"]] = self.run_task(t, files)
            self.log("started %-9s task %s" % (t["tag"], ids[t["tag"]]))
        outs = {}
        for tag, tid in ids.items():
            task = self.stack.wait_task(tid, timeout=600)
            ok = task["status"] == "succeeded"
            self.check("showcase/%s_succeeded" % tag, ok, task.get("error") or task["status"])
            outs[tag] = self.download(tid, tag)
            self.log("%-9s %s: %s" % (tag, task["status"], ", ".join(sorted(outs[tag])) or "no files"))

        html = outs["tokyo"].get("map.html", b"").decode("utf-8", "replace")
        self.check("showcase/tokyo_map_html", "L.map(" in html and "L.polyline(" in html and
                   "Leaflet" in html and html.count("<script>") >= 2 and "src=\"http" not in html,
                   "%d bytes" % len(html))
        size = png_size(outs["poster"].get("poster.png", b""))
        self.check("showcase/poster_png_1200x1700", size == (1200, 1700), "size %s" % (size,))
        svg = outs["poster"].get("poster.svg", b"")
        self.check("showcase/poster_svg", svg.startswith(b"<?xml") and b"<svg" in svg, "%d bytes" % len(svg))
        mid = outs["piano"].get("composition.mid", b"")
        self.check("showcase/piano_midi", mid[:4] == b"MThd", "%d bytes" % len(mid))

        media = [(n, outs[tag][n]) for tag, n in (("countdown", "countdown.mp4"), ("piano", "preview.wav"),
                                                  ("piano", "composition.mid")) if n in outs[tag]]
        cid = self.run_task(CHECK, media)
        task = self.stack.wait_task(cid, timeout=300)
        checks = {}
        try:
            checks = json.loads(self.download(cid, "checks").get("checks.json", b"{}"))
        except ValueError:
            pass
        probe = checks.get("ffprobe", {})
        stream = (probe.get("streams") or [{}])[0]
        dur = float(probe.get("format", {}).get("duration", 0) or 0)
        rate = stream.get("r_frame_rate", "")
        self.check("showcase/countdown_11s_30fps", abs(dur - 11.0) < 0.2 and rate == "30/1",
                   "duration %.2f s, frame rate %s, %s frames" % (dur, rate, stream.get("nb_read_frames")))
        secs, rms = checks.get("wav_seconds") or 0, checks.get("wav_rms") or 0
        self.check("showcase/piano_wav", secs > 20 and rms > 0.005,
                   "%.1f s, RMS amplitude %.4f" % (secs, rms))
        return all(ok for _, ok, _ in self.results)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=os.path.join(HERE, "out"), help="where to save the outputs")
    ap.add_argument("--no-wait", action="store_true", help="stop the service when done")
    a = ap.parse_args()
    if not image_ready():
        print("the sandbox image is not built: run make image", file=sys.stderr)
        return 2
    demo = Demo(a.out).start()
    try:
        ok = demo.run()
        for name, good, detail in demo.results:
            print("%s %s: %s" % ("ok  " if good else "FAIL", name, detail))
        print("outputs saved under %s" % a.out)
        if not a.no_wait:
            print("\nllmbox is serving the four tasks at http://127.0.0.1:%d/ (Ctrl-C to stop)" % demo.stack.port)
            try:
                while True:
                    time.sleep(3600)
            except KeyboardInterrupt:
                pass
        return 0 if ok else 1
    finally:
        demo.stop()


if __name__ == "__main__":
    sys.exit(main())
