"""`make demo`: the four showcase tasks run through the real service with
scripted trajectories, and each output is checked for real (PNG size, the
map's inlined Leaflet, ffprobe duration and frame rate, sox length and
loudness). Needs the showcase packages in the image."""
import os
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "demo"))
sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))
from stack import image_ready  # noqa: E402
import showcase  # noqa: E402


def main():
    if not image_ready():
        print("SKIP showcase: the sandbox image is not built")
        return 0
    out = tempfile.mkdtemp(prefix="llmbox-demo-")
    demo = showcase.Demo(out, log=lambda m: print(m, file=sys.stderr))
    try:
        demo.start()
        demo.run()
    except Exception as e:  # a crash is one clear failure, not a traceback soup
        print("FAIL showcase: %s" % e)
        print(demo.stack.logs() if demo.stack else "", file=sys.stderr)
        return 1
    finally:
        demo.stop()
    for name, ok, detail in demo.results:
        print("%s %s%s" % ("PASS" if ok else "FAIL", name, "" if ok else ": " + detail))
        print("   %s: %s" % (name, detail), file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
