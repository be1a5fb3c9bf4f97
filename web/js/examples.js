// Example tasks to start from: each fills the prompt box with a task the
// default sandbox image can do offline (Python with NumPy, Matplotlib,
// Pillow, ffmpeg, FluidSynth).

import { h, clear } from './dom.js';

export const EXAMPLES = [
  {
    title: 'Chart a CSV',
    prompt: 'Plot the data in the CSV file in /testbed/input as a clear line chart, chart.png (if there is no CSV, '
      + 'make up 12 months of sales figures first and save them as sales.csv). Then describe the trend in two sentences.',
  },
  {
    title: 'A melody as audio',
    prompt: 'Compose a cheerful 8-bar melody, write it as melody.mid with MIDIUtil, render it to melody.wav with '
      + 'FluidSynth and the General MIDI soundfont, and tell me the key and tempo you chose.',
  },
  {
    title: 'An interactive page',
    prompt: 'Build one self-contained HTML file, bounce.html, with a canvas animation of balls bouncing under gravity '
      + 'and buttons to add a ball and to pause. No external scripts or fonts.',
  },
  {
    title: 'A short video',
    prompt: 'Use ffmpeg to make a 4-second MP4 video, clip.mp4 (H.264, yuv420p, 640x360), of a colour test pattern '
      + 'with a running timer, and a PNG thumbnail of its first frame.',
  },
  {
    title: 'Summarise my files',
    prompt: 'Read every file in /testbed/input and write summary.md: one paragraph per file saying what it is and what '
      + 'stands out, then a short overall summary.',
  },
];

/** Renders the examples into container (a .examples element); onPick(prompt). */
export function renderExamples(container, onPick) {
  const list = container.querySelector('.examples-list');
  clear(list);
  for (const ex of EXAMPLES) {
    list.appendChild(h('li', null,
      h('button', {
        type: 'button',
        class: 'example',
        title: ex.prompt,
        onclick: () => onPick(ex.prompt),
      }, ex.title)));
  }
  container.hidden = false;
}
