// A task as a conversation (follow-ups): its rounds, each with the message
// that started it, its answer and its outputs marked against the round
// before (new, changed, removed), and the message box under a task that
// has ended. All model and sandbox text goes in as text.

import { h, clear, show } from './dom.js';
import { api, artifactUrl, taskPath, ApiError } from './api.js';
import { bytes, dateTime, plural, sentence } from './format.js';
import { statusLabel, isFinal } from './status.js';

/** [{path, size, mark}] of a round's outputs against the previous round's:
 * mark 'new', 'changed' (another sha256), 'removed', or '' (the same). */
export function outputMarks(prev, cur) {
  const before = new Map((Array.isArray(prev) ? prev : []).map((a) => [a.path, a]));
  const now = Array.isArray(cur) ? cur : [];
  const out = now.map((a) => {
    const b = before.get(a.path);
    const mark = !prev ? '' : !b ? 'new' : b.sha256 !== a.sha256 ? 'changed' : '';
    return { path: String(a.path), size: Number(a.size) || 0, mark };
  });
  const here = new Set(now.map((a) => a.path));
  for (const [path, b] of before) {
    if (!here.has(path)) out.push({ path: String(path), size: Number(b.size) || 0, mark: 'removed' });
  }
  return out.sort((x, y) => (x.path < y.path ? -1 : x.path > y.path ? 1 : 0));
}

/** A file as it was at the end of round n (GET /api/tasks/{id}/rounds/{n}/{path}). */
function roundFileUrl(taskId, n, path) {
  return `${taskPath(taskId)}/rounds/${Number(n)}/${String(path).split('/').filter(Boolean).map(encodeURIComponent).join('/')}`;
}

const SANDBOX_NOTE = {
  kept: 'same sandbox as the round before',
  restored: 'restored from the saved state (no processes)',
  fresh: 'fresh sandbox: files only',
};

function roundCard(taskId, round, prev, isLast, onFork) {
  const marks = outputMarks(prev ? prev.artifacts : null, round.artifacts);
  const files = h('ul', { class: 'round-files' },
    ...marks.map((f) => h('li', { class: `round-file${f.mark ? ` is-${f.mark}` : ''}` },
      f.mark ? h('span', { class: `mark mark-${f.mark}` }, f.mark) : null,
      // the files on disk are the last round's: earlier rounds' are listed
      f.mark !== 'removed' && onFork
        ? h('a', {
          href: isLast ? artifactUrl(taskId, f.path) : roundFileUrl(taskId, round.round, f.path),
          download: f.path.split('/').pop(),
        }, f.path)
        : h('span', { class: 'mono' }, f.path),
      h('span', { class: 'muted' }, ` ${bytes(f.size)}`))));
  const inputs = Array.isArray(round.inputs) ? round.inputs : [];
  return h('li', { class: 'round card', dataset: { round: round.round } },
    h('header', { class: 'round-head' },
      h('h3', { class: 'round-title' }, `Round ${round.round}`),
      h('span', { class: `chip chip-${chip(round.status)}` }, statusLabel(round.status)),
      round.sandbox && SANDBOX_NOTE[round.sandbox]
        ? h('span', { class: 'muted round-sandbox' }, SANDBOX_NOTE[round.sandbox]) : null,
      h('span', { class: 'muted' }, dateTime(round.created_ms)),
      round.state_bytes !== null && round.state_bytes !== undefined
        ? h('span', { class: 'muted', title: 'A later round or a fork can start from it' }, `state saved (${bytes(round.state_bytes)})`)
        : null),
    h('div', { class: 'round-prompt text-block' }, String(round.prompt || '')),
    inputs.length ? h('p', { class: 'muted' }, `With ${plural(inputs.length, 'file', 'files')}: `,
      inputs.map((f) => String((f && f.path) || '')).join(', ')) : null,
    round.answer ? h('div', { class: 'round-answer text-block' }, String(round.answer))
      : h('p', { class: 'muted' }, round.reason ? sentence(round.reason)
        : isFinal(round.status) ? 'No answer.' : 'Running…'),
    marks.length ? files : null,
    onFork && isFinal(round.status) ? h('div', { class: 'round-actions' },
      h('button', { type: 'button', class: 'button button-quiet button-small', onclick: () => onFork(round.round),
        title: 'A new task that starts from the conversation and the files as at the end of this round' },
      `Fork from round ${round.round}`)) : null);
}

function chip(status) {
  return { succeeded: 'ok', failed: 'bad', cancelled: 'warn', running: 'live', queued: 'live' }[status] || 'neutral';
}

/** The conversation section: the rounds, and the message box once the task
 * has ended. onSent(answer) after a message was accepted; onFork(round)
 * from a round's Fork button; readOnly (a shared view): neither. */
export function renderThread(root, task, { onSent, onFork, readOnly = false } = {}) {
  clear(root);
  const rounds = Array.isArray(task.rounds) ? task.rounds : [];
  if (rounds.length > 1) {
    root.append(h('h2', { id: 'thread-title', class: 'section-title' }, 'Conversation ',
      h('span', { class: 'section-count' }, `(${plural(rounds.length, 'round', 'rounds')})`)),
    h('ol', { class: 'rounds', 'aria-labelledby': 'thread-title' },
      ...rounds.map((r, i) => roundCard(task.id, r, i ? rounds[i - 1] : null, i === rounds.length - 1,
        readOnly ? null : onFork))));
  }
  if (readOnly || !isFinal(task.status) || (task.options && task.options.mode === 'llm')) return;
  root.append(messageBox(task, onSent));
}

function messageBox(task, onSent) {
  const kept = task.sandbox && Number(task.sandbox.kept_until_ms) > Date.now();
  const rounds = Array.isArray(task.rounds) ? task.rounds : [];
  const last = rounds.length ? rounds[rounds.length - 1] : null;
  const saved = last && last.state_bytes !== null && last.state_bytes !== undefined;
  const text = h('textarea', {
    id: 'followup-prompt', name: 'prompt', rows: '3', required: true,
    placeholder: 'Ask for a change or a next step, e.g. "make the bars blue"',
  });
  const files = h('input', { id: 'followup-files', type: 'file', name: 'files', multiple: true });
  const fresh = h('input', { id: 'followup-fresh', type: 'checkbox', name: 'fresh' });
  fresh.checked = !kept && !saved; /* nothing to continue in: say so up front */
  const send = h('button', { type: 'submit', class: 'button button-primary' }, 'Send');
  const error = h('p', { class: 'form-error', role: 'alert', hidden: true });
  const note = h('p', { class: 'muted followup-note' }, kept
    ? `The sandbox is kept until ${dateTime(task.sandbox.kept_until_ms)}: the next round continues in it, with `
      + 'its files, installed packages and shell as they are.'
    : saved ? 'The sandbox of the last round is no longer kept: the next round restores its saved state (files, '
      + 'installed packages, working directory and environment; running processes do not come back).'
      : 'The sandbox of the last round is no longer kept and no state of it was saved: the next round runs in a '
        + 'fresh sandbox with the input files and the last outputs only.');
  const form = h('form', { class: 'card followup', 'aria-label': 'Send a follow-up message' },
    h('label', { for: 'followup-prompt', class: 'field-label' }, 'Continue the conversation'),
    text,
    h('div', { class: 'followup-row' },
      h('label', { for: 'followup-files', class: 'muted' }, 'Add files '), files,
      h('label', { class: 'check' }, fresh, ' Continue in a fresh sandbox (files only)'),
      send),
    note,
    error);
  form.addEventListener('submit', async (e) => {
    e.preventDefault();
    if (!text.value.trim()) { text.focus(); return; }
    const body = new FormData();
    body.append('prompt', text.value);
    if (fresh.checked) body.append('fresh', '1');
    for (const f of files.files) body.append('files', f, f.name);
    send.disabled = true;
    send.textContent = 'Sending…';
    show(error, false);
    try {
      const answer = await api.message(task.id, body);
      if (onSent) onSent(answer);
    } catch (err) {
      error.textContent = err instanceof ApiError ? err.message : 'The message could not be sent.';
      show(error, true);
      send.disabled = false;
      send.textContent = 'Send';
    }
  });
  return form;
}
