// The list of past tasks in the sidebar: status, prompt, time and model,
// newest first, a page at a time ("Show older tasks"), each deletable.

import { h, clear, $, show } from './dom.js';
import { api } from './api.js';
import { ago, dateTime, sentence, modelLabel } from './format.js';
import { statusLabel } from './status.js';

const POLL_MS = 15000;
const PAGE = 30;

export class History {
  /** onDeleted(id) is called after a task was deleted from the list. */
  constructor({ onDeleted } = {}) {
    this.onDeleted = onDeleted || (() => {});
    this.list = $('#history-list');
    this.message = $('#history-message');
    this.more = $('#history-more');
    this.current = '';
    this.timer = 0;
    this.loading = false;
    this.pages = 1;       // how many pages the list shows; a refresh reloads them all
    this.next = null;     // cursor of the page after the last one shown
    $('#history-refresh').addEventListener('click', () => this.load(true));
    this.more.addEventListener('click', () => this.loadMore());
    document.addEventListener('visibilitychange', () => {
      if (!document.hidden) this.load();
    });
  }

  setCurrent(id) {
    this.current = id || '';
    for (const a of this.list.querySelectorAll('a.history-link')) {
      if (a.dataset.id === this.current) a.setAttribute('aria-current', 'page');
      else a.removeAttribute('aria-current');
    }
  }

  /** Reflect a status seen live in the task view without asking the server. */
  updateStatus(id, status) {
    for (const a of this.list.querySelectorAll('a.history-link')) {
      if (a.dataset.id !== id) continue;
      const chip = a.querySelector('.chip');
      if (chip) {
        chip.className = `chip chip-${chipKind(status)}`;
        chip.textContent = statusLabel(status);
      }
    }
  }

  /** Forget a task deleted elsewhere (the task view). */
  drop(id) {
    const li = this.list.querySelector(`li[data-id="${CSS.escape(id)}"]`);
    if (li) li.remove();
    if (!this.list.children.length) this.message.textContent = 'No tasks yet. Your tasks will be listed here.';
  }

  /** Reloads the pages shown so far (the first page, plus older ones asked for). */
  async load(announce = false) {
    clearTimeout(this.timer);
    if (this.loading) return;
    this.loading = true;
    let tasks = [];
    let ok = false;
    try {
      let cursor = {};
      let next = null;
      for (let i = 0; i < this.pages; i++) {
        const data = await api.tasks({ limit: PAGE, ...cursor });
        const page = Array.isArray(data.tasks) ? data.tasks : [];
        tasks = tasks.concat(page);
        next = data.next_before ? { before: data.next_before, beforeId: data.next_before_id } : null;
        if (!next) break;
        cursor = next;
      }
      this.next = next;
      ok = true;
      this.message.textContent = tasks.length ? (announce ? 'Up to date.' : '') : 'No tasks yet. Your tasks will be listed here.';
      this.render(tasks);
    } catch (e) {
      this.message.textContent = `Past tasks could not be loaded. ${e.message}`;
    } finally {
      this.loading = false;
    }
    show(this.more, ok && Boolean(this.next));
    const active = tasks.some((t) => t.status === 'queued' || t.status === 'running');
    if (!document.hidden) this.timer = setTimeout(() => this.load(), active ? POLL_MS / 3 : POLL_MS);
  }

  async loadMore() {
    if (this.loading || !this.next) return;
    this.loading = true;
    this.more.disabled = true;
    try {
      const data = await api.tasks({ limit: PAGE, ...this.next });
      const page = Array.isArray(data.tasks) ? data.tasks : [];
      this.pages++;
      this.next = data.next_before ? { before: data.next_before, beforeId: data.next_before_id } : null;
      const first = this.list.children.length;
      for (const t of page) this.appendItem(t);
      // keyboard users land on the first task of the new page
      const link = this.list.children[first] && this.list.children[first].querySelector('a');
      if (link) link.focus();
      this.message.textContent = '';
    } catch (e) {
      this.message.textContent = `Older tasks could not be loaded. ${e.message}`;
    } finally {
      this.loading = false;
      this.more.disabled = false;
      show(this.more, Boolean(this.next));
    }
  }

  render(tasks) {
    // keep an open "Delete?" question across the periodic refresh
    const asking = this.list.querySelector('li.is-confirming');
    const askingId = asking ? asking.dataset.id : '';
    if (asking && tasks.some((t) => t && t.id === askingId)) return;
    clear(this.list);
    for (const t of tasks) this.appendItem(t);
  }

  appendItem(t) {
    if (!t || typeof t.id !== 'string' || this.list.querySelector(`li[data-id="${CSS.escape(t.id)}"]`)) return;
    const prompt = String(t.prompt || '').trim() || '(no prompt)';
    const firstLine = prompt.split('\n', 1)[0].slice(0, 200);
    const a = h('a', {
      class: 'history-link',
      href: `#task=${encodeURIComponent(t.id)}`,
      dataset: { id: t.id },
      title: prompt.slice(0, 500),
    },
      h('span', { class: 'history-prompt' }, firstLine),
      h('span', { class: 'history-meta' },
        h('span', { class: `chip chip-${chipKind(t.status)}` }, statusLabel(t.status)),
        h('time', { datetime: t.created_ms ? new Date(t.created_ms).toISOString() : null, title: dateTime(t.created_ms) }, ago(t.created_ms)),
        t.model ? h('span', { class: 'history-model', title: `Model: ${modelLabel(t.model)}` }, modelLabel(t.model)) : null,
      ),
    );
    if (t.id === this.current) a.setAttribute('aria-current', 'page');
    const del = h('button', {
      type: 'button',
      class: 'history-delete',
      'aria-label': `Delete task: ${firstLine.slice(0, 80)}`,
      title: 'Delete this task',
    }, trashIcon());
    const li = h('li', { class: 'history-item', dataset: { id: t.id } }, a, del);
    del.addEventListener('click', () => this.confirmDelete(li, t.id, del));
    this.list.appendChild(li);
  }

  /** Asks in place, then deletes: no modal dialog, keyboard friendly. */
  confirmDelete(li, id, del) {
    if (li.classList.contains('is-confirming')) return;
    li.classList.add('is-confirming');
    const note = h('p', { class: 'history-note', role: 'alert' });
    const yes = h('button', { type: 'button', class: 'button button-danger button-small' }, 'Delete');
    const no = h('button', { type: 'button', class: 'button button-quiet button-small' }, 'Keep');
    const box = h('div', { class: 'history-confirm', role: 'group', 'aria-label': 'Delete this task?' },
      h('span', null, 'Delete this task and its files?'), yes, no, note);
    li.appendChild(box);
    const close = () => {
      box.remove();
      li.classList.remove('is-confirming');
      del.focus();
    };
    no.addEventListener('click', close);
    box.addEventListener('keydown', (e) => { if (e.key === 'Escape') close(); });
    yes.addEventListener('click', async () => {
      yes.disabled = true;
      no.disabled = true;
      try {
        await api.remove(id);
      } catch (e) {
        if (!(e && e.status === 404)) { // already gone is what was asked
          note.textContent = sentence(`The task could not be deleted. ${e.message}`);
          yes.disabled = false;
          no.disabled = false;
          return;
        }
      }
      const next = li.nextElementSibling || li.previousElementSibling;
      li.remove();
      this.message.textContent = 'The task was deleted.';
      const focusTo = next && next.querySelector('a');
      if (focusTo) focusTo.focus();
      else $('#history-refresh').focus();
      this.onDeleted(id);
    });
    yes.focus();
  }
}

function trashIcon() {
  const ns = 'http://www.w3.org/2000/svg';
  const svg = document.createElementNS(ns, 'svg');
  svg.setAttribute('viewBox', '0 0 24 24');
  svg.setAttribute('aria-hidden', 'true');
  svg.setAttribute('focusable', 'false');
  const p = document.createElementNS(ns, 'path');
  p.setAttribute('d', 'M4 7h16M9 7V4.5h6V7M6.5 7l1 12.5h9l1-12.5M10 11v5M14 11v5');
  p.setAttribute('fill', 'none');
  p.setAttribute('stroke', 'currentColor');
  p.setAttribute('stroke-width', '1.8');
  p.setAttribute('stroke-linecap', 'round');
  p.setAttribute('stroke-linejoin', 'round');
  svg.appendChild(p);
  return svg;
}

function chipKind(status) {
  switch (status) {
    case 'succeeded': return 'ok';
    case 'failed': return 'bad';
    case 'cancelled': return 'warn';
    case 'running': return 'live';
    default: return 'neutral';
  }
}
