// Header health indicator and the banner that explains what is wrong.

import { h, clear, $, show } from './dom.js';
import { api } from './api.js';
import { sentence } from './format.js';

const POLL_MS = 30000;

export class Health {
  constructor() {
    this.el = $('#health');
    this.text = $('#health-text');
    this.banner = $('#banner');
    this.list = $('#banner-list');
    this.timer = 0;
    this.last = null;
    document.addEventListener('visibilitychange', () => {
      if (!document.hidden) this.check();
    });
  }

  start() {
    this.check();
  }

  async check() {
    clearTimeout(this.timer);
    let problems = [];
    let state = 'ok';
    let label = 'Ready';
    let title = '';
    try {
      const data = await api.health();
      this.last = data;
      ({ problems, state, label } = assess(data));
      title = data.version ? `llmbox ${data.version}` : '';
      if (data.model && data.model.model) title += `${title ? ' · ' : ''}model ${data.model.model}`;
    } catch (e) {
      state = 'down';
      label = 'Server unreachable';
      problems = [e.status
        ? `The llmbox health check failed (${e.message.replace(/\.$/, '')}) — tasks may not start until it works again.`
        : 'The llmbox server is not responding — tasks cannot start until it is back. This page keeps checking.'];
    }
    this.el.dataset.state = state;
    this.text.textContent = label;
    this.el.title = title ? `${label} · ${title}` : label;
    clear(this.list);
    for (const p of problems) this.list.appendChild(h('li', null, sentence(p)));
    show(this.banner, problems.length > 0);
    // Look again sooner while something is wrong, so the banner clears soon.
    if (!document.hidden) this.timer = setTimeout(() => this.check(), state === 'ok' ? POLL_MS : POLL_MS / 3);
  }
}

/** Turn a /api/health answer into a state, a short label and sentences. */
export function assess(data) {
  const problems = [];
  let state = 'ok';
  let label = 'Ready';
  const sb = data && data.sandboxd;
  const model = data && data.model;

  if (data && data.ok === false && !sb && !model) {
    state = 'down';
    label = 'Service not ready';
    problems.push(data.message || 'The llmbox service reports that it is not ready');
  }
  if (sb && sb.ok === false) {
    state = 'down';
    label = 'Sandbox down';
    // the server's message is already a whole sentence: show it as it is
    const said = sb.message ? `${String(sb.message).replace(/\.?$/, '.')} ` : 'The sandbox daemon is not available. ';
    problems.push(`${said}Tasks cannot run until it is back.`);
  }
  if (model && model.reachable === false) {
    if (state === 'ok') { state = 'warn'; label = 'Model unreachable'; }
    const where = model.url ? `The model endpoint ${model.url}` : 'The model endpoint';
    const said = model.message ? `${String(model.message).replace(/\.?$/, '.')} ` : `${where} is not reachable. `;
    problems.push(`${said}Tasks will fail until it is.`);
  }
  return { problems, state, label };
}
