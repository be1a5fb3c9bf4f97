// The read-only view of a shared task (/shared.html#<share id>): its
// rounds, answers and files, for someone without an account. The share id
// is the capability (GET /api/shared/{id}); files come as the signed
// download links the answer carries. All task text goes in as text.

import { $, h, append, clear, show } from './dom.js';
import { getJSON, ApiError } from './api.js';
import { bytes, dateTime } from './format.js';
import { renderThread } from './thread.js';

async function main() {
  const id = location.hash.replace(/^#/, '');
  const status = $('#shared-status');
  const view = $('#shared-view');
  if (!/^[0-9a-f]{32}$/.test(id)) {
    status.textContent = 'This is not a share link: it ends with #, then 32 letters and digits.';
    return;
  }
  let task;
  try {
    task = await getJSON(`/api/shared/${id}`);
  } catch (e) {
    status.textContent = e instanceof ApiError ? e.message : 'The shared task could not be loaded.';
    return;
  }
  status.textContent = `Shared until ${dateTime(task.shared && task.shared.expires_ms)}.`;
  clear(view);
  const thread = h('div');
  // a one-round task shows its own message and answer; the message box
  // never appears (renderThread leaves it out for a read-only task)
  renderThread(thread, { ...task, status: 'shared' }, { readOnly: true });
  const rounds = Array.isArray(task.rounds) ? task.rounds : [];
  const files = Array.isArray(task.artifacts) ? task.artifacts : [];
  append(view, [
    h('h1', { class: 'view-title' }, 'Shared task'),
    rounds.length <= 1 ? h('div', { class: 'card round' },
      h('div', { class: 'round-prompt text-block' }, String(task.prompt || '')),
      h('div', { class: 'round-answer text-block' }, String(task.answer || task.reason || 'No answer.'))) : null,
    thread,
    h('h2', { class: 'section-title' }, 'Files'),
    files.length ? h('ul', { class: 'round-files' }, ...files.map((a) => h('li', { class: 'round-file' },
      a.download_url ? h('a', { href: a.download_url, download: String(a.path).split('/').pop() }, String(a.path))
        : h('span', { class: 'mono' }, String(a.path)),
      h('span', { class: 'muted' }, ` ${bytes(Number(a.size) || 0)}`)))) : h('p', { class: 'muted' }, 'No files.')]);
  show(view, true);
}

main();
