// The sandbox's network in the task view, for a task whose network is a
// policy of rules (docs/NETWORK.md): the rules, and every name the sandbox
// looked up and every connection it tried, in order, from the record the
// gateway keeps (GET /api/tasks/{id}/network): time, what, name,
// address:port, allowed or refused with the rule that decided, bytes.
//
// Names, addresses and rules come from the sandbox (through the gateway's
// record): hostile. Everything goes in as text (dom.js's h), never as HTML,
// and every field is checked for its type before it is shown.

import { h, clear, show } from './dom.js';
import { getJSON, taskPath, ApiError } from './api.js';
import { bytes, count, plural } from './format.js';

const SHOW_MAX = 2000; // rows drawn; the rest are counted

/** Whether a task's network is a policy of rules (its record exists). */
export function hasRules(task) {
  return !!task && typeof task.network === 'string' && task.network.trim().startsWith('{');
}

const text = (v) => (typeof v === 'string' ? v : '');
const num = (v) => (typeof v === 'number' && Number.isFinite(v) ? v : null);

function timeOf(ms) {
  const t = num(ms);
  if (t === null || t <= 0) return ['', ''];
  const d = new Date(t);
  const pad = (n, w = 2) => String(n).padStart(w, '0');
  const hms = `${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())}`;
  return [hms, `${d.toLocaleDateString()} ${hms}.${pad(d.getMilliseconds(), 3)}`];
}

function where(c) {
  const addr = text(c.addr);
  const port = num(c.port);
  if (!addr) return '';
  const a = addr.includes(':') && port !== null ? `[${addr}]` : addr; // IPv6 with a port
  return port !== null ? `${a}:${port}` : a;
}

function rulesText(policy) {
  if (!policy || typeof policy !== 'object') return '';
  const list = (k) => (Array.isArray(policy[k]) ? policy[k].filter((x) => typeof x === 'string') : []);
  const allow = list('allow');
  const deny = list('deny');
  return `allow ${allow.length ? allow.join(', ') : 'nothing'}${deny.length ? `; deny ${deny.join(', ')}` : ''}`;
}

function row(c) {
  const ok = c.allowed === true;
  const kind = text(c.kind);
  const name = text(c.name);
  const out = num(c.bytes_out);
  const inn = num(c.bytes_in);
  const [hms, full] = timeOf(c.time_ms);
  return h('tr', { class: ok ? 'net-allowed' : 'net-refused' },
    h('td', { class: 'mono', title: full || null }, hms),
    h('td', { class: 'net-name' }, name || h('span', { class: 'muted' }, '(no name)'),
      h('span', { class: 'net-kind' }, kind === 'dns' ? 'name lookup' : kind === 'tcp' ? 'connection' : kind)),
    h('td', { class: 'mono net-addr' }, where(c)),
    h('td', null, h('span', { class: `chip ${ok ? 'chip-ok' : 'chip-bad'}` }, ok ? 'allowed' : 'refused'),
      h('span', { class: 'net-rule' }, text(c.rule))),
    h('td', { class: 'num mono' }, ...(kind === 'tcp' && out !== null && inn !== null
      ? [h('span', { class: 'net-bytes' }, `${bytes(out)} ↑`), h('span', { class: 'net-bytes' }, `${bytes(inn)} ↓`)]
      : [])));
}

export class NetworkView {
  constructor() {
    this.count = h('span', { class: 'section-count' });
    this.rules = h('p', { class: 'net-rules' });
    this.note = h('p', { class: 'muted net-note', role: 'status' });
    this.body = h('tbody');
    this.table = h('table', { class: 'net-table', hidden: true },
      h('colgroup', null, h('col', { class: 'net-col-time' }), h('col', { class: 'net-col-name' }),
        h('col', { class: 'net-col-addr' }), h('col', { class: 'net-col-decision' }), h('col', { class: 'net-col-bytes' })),
      h('thead', null, h('tr', null,
        h('th', { scope: 'col' }, 'Time'), h('th', { scope: 'col' }, 'Name'), h('th', { scope: 'col' }, 'Address'),
        h('th', { scope: 'col' }, 'Decision and rule'),
        h('th', { scope: 'col', class: 'num', title: 'Bytes sent ↑ and received ↓' }, 'Bytes'))),
      this.body);
    this.el = h('section', { class: 'card network-card', 'aria-labelledby': 'network-title', hidden: true },
      h('h2', { id: 'network-title', class: 'section-title' }, 'Network ', this.count),
      this.rules,
      h('div', { class: 'net-scroll' }, this.table),
      this.note);
    this.taskId = '';
    this.busy = false;
    this.again = false;
  }

  /** Loads and shows the record of task id (a task with rules only). */
  async load(id) {
    if (this.busy) { this.again = true; return; } // after the one in flight: the end's rows come last
    this.busy = true;
    this.taskId = id;
    show(this.el, true);
    try {
      const rec = await getJSON(`${taskPath(id)}/network`);
      if (this.taskId === id) this.render(rec);
    } catch (e) {
      if (this.taskId !== id) return;
      // 404: the server's sentence says why (no sandbox yet, or none kept)
      this.note.textContent = e instanceof ApiError && e.status === 404
        ? e.message
        : `The network record could not be loaded. ${e.message}`;
    } finally {
      this.busy = false;
      if (this.again && this.taskId === id) {
        this.again = false;
        this.load(id);
      }
    }
  }

  render(rec) {
    const conns = rec && Array.isArray(rec.connections) ? rec.connections.filter((c) => c && typeof c === 'object') : [];
    this.rules.textContent = `Rules: ${rulesText(rec && rec.network)}`;
    const refused = conns.filter((c) => c.allowed !== true).length;
    this.count.textContent = conns.length ? `${plural(conns.length, 'attempt', 'attempts')}, ${count(refused)} refused` : '';
    clear(this.body);
    this.body.append(...conns.slice(0, SHOW_MAX).map(row));
    show(this.table, conns.length > 0);
    const notes = [];
    if (!conns.length) notes.push('The sandbox has not looked up a name or opened a connection.');
    if (conns.length > SHOW_MAX) notes.push(`The first ${count(SHOW_MAX)} are shown.`);
    if (rec && rec.truncated === true) notes.push('The record is longer than one answer reads: the latest attempts are not shown.');
    this.note.textContent = notes.join(' ');
  }
}
