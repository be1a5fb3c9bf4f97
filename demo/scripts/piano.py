# A calm piano piece in A minor: MIDI with MIDIUtil, a WAV preview rendered
# by FluidSynth with the General MIDI soundfont.
import subprocess
from midiutil import MIDIFile

TEMPO = 72
# i - VI - III - VII in A minor: Am, F, C, G, twice, then Am to close
chords = [[57, 60, 64], [53, 57, 60], [48, 52, 55], [55, 59, 62]] * 2 + [[57, 60, 64]]
melody = [76, 74, 72, 71, 72, 69, 71, 72, 74, 72, 71, 67, 69, 71, 72, 69,
          76, 77, 76, 74, 72, 74, 72, 71, 69, 67, 69, 71, 72, 71, 69, 69]
m = MIDIFile(2)
m.addTempo(0, 0, TEMPO)
m.addProgramChange(0, 0, 0, 0)      # acoustic grand piano
m.addProgramChange(1, 1, 0, 0)
for i, ch in enumerate(chords):
    beat = i * 4
    for k, note in enumerate(ch):    # a slow arpeggio in the left hand
        m.addNote(1, 1, note, beat + k * 0.5, 4 - k * 0.5, 52)
for i, note in enumerate(melody):
    m.addNote(0, 0, note, i * 1.0, 1.0 if i % 4 else 1.5, 70 if i % 4 == 0 else 58)
with open("/testbed/output/composition.mid", "wb") as f:
    m.writeFile(f)
subprocess.run(["fluidsynth", "-ni", "-q", "-g", "0.8", "-r", "44100",
                "-F", "/testbed/output/preview.wav",
                "/usr/share/sounds/sf2/FluidR3_GM.sf2", "/testbed/output/composition.mid"],
               check=True, stdout=subprocess.DEVNULL)
print("composition.mid and preview.wav: %d bars in A minor at %d bpm" % (len(chords), TEMPO))
