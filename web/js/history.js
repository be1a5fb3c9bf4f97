// The list of past tasks in the sidebar.

import { h, clear, $ } from './dom.js';
import { api } from './api.js';
import { ago, dateTime } from './format.js';
import { statusLabel } from './status.js';

const POLL_MS = 15000;

export class History {
  constructor() {
    this.list = $('#history-list');
    this.message = $('#history-message');
    this.current = '';
    this.timer = 0;
    this.loading = false;
    $('#history-refresh').addEventListener('click', () => this.load(true));
    document.addEventListener('visibilitychange', () => {
      if (!document.hidden) this.load();
    });
  }

  setCurrent(id) {
    this.current = id || '';
    for (const a of this.list.querySelectorAll('a')) {
      if (a.dataset.id === this.current) a.setAttribute('aria-current', 'page');
      else a.removeAttribute('aria-current');
    }
  }

  /** Reflect a status seen live in the task view without asking the server. */
  updateStatus(id, status) {
    for (const a of this.list.querySelectorAll('a')) {
      if (a.dataset.id !== id) continue;
      const chip = a.querySelector('.chip');
      if (chip) {
        chip.className = `chip chip-${chipKind(status)}`;
        chip.textContent = statusLabel(status);
      }
    }
  }

  async load(announce = false) {
    clearTimeout(this.timer);
    if (this.loading) return;
    this.loading = true;
    let tasks = null;
    try {
      const data = await api.tasks();
      tasks = Array.isArray(data.tasks) ? data.tasks : (Array.isArray(data) ? data : []);
      this.message.textContent = tasks.length ? (announce ? 'Up to date.' : '') : 'No tasks yet. Your tasks will be listed here.';
      this.render(tasks);
    } catch (e) {
      this.message.textContent = `Past tasks could not be loaded. ${e.message}`;
    } finally {
      this.loading = false;
    }
    const active = tasks && tasks.some((t) => t.status === 'queued' || t.status === 'running');
    if (!document.hidden) this.timer = setTimeout(() => this.load(), active ? POLL_MS / 3 : POLL_MS);
  }

  render(tasks) {
    clear(this.list);
    for (const t of tasks) {
      if (!t || typeof t.id !== 'string') continue;
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
        ),
      );
      if (t.id === this.current) a.setAttribute('aria-current', 'page');
      this.list.appendChild(h('li', null, a));
    }
  }
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
