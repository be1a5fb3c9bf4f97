# Measures the showcase media with the tools made for it (ffprobe, sox) and
# writes the figures to /testbed/output/checks.json for the demo's checks.
import json, re, subprocess

def run(*argv):
    p = subprocess.run(argv, capture_output=True, text=True)
    return p.returncode, p.stdout + p.stderr

out = {}
rc, txt = run("ffprobe", "-v", "error", "-select_streams", "v:0", "-count_frames",
              "-show_entries", "stream=r_frame_rate,nb_read_frames,width,height:format=duration",
              "-of", "json", "/testbed/input/countdown.mp4")
out["ffprobe"] = json.loads(txt) if rc == 0 else {"error": txt[-500:]}
rc, txt = run("sox", "--i", "-D", "/testbed/input/preview.wav")
out["wav_seconds"] = float(txt) if rc == 0 else None
rc, txt = run("sox", "/testbed/input/preview.wav", "-n", "stat")
m = re.search(r"RMS\s+amplitude:\s+([0-9.eE+-]+)", txt)
out["wav_rms"] = float(m.group(1)) if m else None
rc, txt = run("file", "-b", "/testbed/input/composition.mid")
out["midi_type"] = txt.strip()
json.dump(out, open("/testbed/output/checks.json", "w"), indent=1)
print(json.dumps(out))
