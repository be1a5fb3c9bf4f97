// The Evaluations view (#evals: the form and the list; #eval=<id>: one
// evaluation's progress, summary table, token and time figures and runs).
// Everything from the server (names, answers, errors) goes in as text.

import { h, clear, $, show } from './dom.js';
import { api } from './api.js';
import { ago, count, duration, sentence } from './format.js';
import { statusLabel, isFinal } from './status.js';

const POLL_MS = 2000;
const DOMAIN_ORDER = ['math', 'physics', 'chem', 'biomed', 'long_context', 'instruct_follow'];

/** An eval id as it may appear in a URL. */
export function validEvalId(id) {
  return typeof id === 'string' && /^[0-9a-f]{32}$/.test(id);
}

function pct(x) {
  return typeof x === 'number' ? `${x.toFixed(1)}` : '—';
}

function num(x, digits = 2) {
  if (typeof x !== 'number') return '—';
  return Number.isInteger(x) ? count(x) : x.toFixed(digits);
}

function share(x) {
  return typeof x === 'number' ? `${(x * 100).toFixed(1)} %` : '—';
}

/** Δ in points, with a sign and a class saying which way it goes. */
function deltaCell(d) {
  if (typeof d !== 'number') return h('td', { class: 'num' }, '—');
  const cls = d > 0 ? 'delta delta-up' : d < 0 ? 'delta delta-down' : 'delta';
  return h('td', { class: `num ${cls}` }, `${d > 0 ? '+' : ''}${d.toFixed(1)}`);
}

function progressText(p) {
  if (!p) return '';
  const parts = [`${count(p.done + p.error)} of ${count(p.total)} runs finished`];
  if (p.running) parts.push(`${count(p.running)} running`);
  if (p.scoring) parts.push(`${count(p.scoring)} being scored`);
  if (p.failed) parts.push(`${count(p.failed)} failed`);
  if (p.error) parts.push(`${count(p.error)} errors`);
  if (p.skipped) parts.push(`${count(p.skipped)} skipped`);
  return parts.join(' · ');
}

// An official benchmark folder's run (llmbox eval --benchmark names it
// "benchmark <folder> (config.yaml <sha256 prefix>, reward.py <prefix>)"):
// which folder and which files, so two runs can be told to be the same
// experiment; the full hashes of all its files are in summary.json.
function benchmarkLine(name) {
  const m = /^benchmark (.{1,64}) \(config\.yaml ([0-9a-f]{12}), reward\.py ([0-9a-f]{12})\)$/.exec(name || '');
  if (!m) return null;
  return h('p', { class: 'hint', id: 'eval-benchmark' },
    `Official benchmark folder ${m[1]}: config.yaml sha256 ${m[2]}…, reward.py sha256 ${m[3]}… `
    + '(its prompts, directories, tool names and compute_score; every file\'s SHA-256 is in summary.json of llmbox eval --out)');
}

function progressBar(p) {
  const max = Math.max(1, p ? p.total : 1);
  const val = p ? p.done + p.error + p.skipped : 0;
  return h('progress', { class: 'eval-progress', max: String(max), value: String(val), 'aria-label': 'Runs finished' });
}

export class EvalsView {
  constructor() {
    this.el = $('#evals-view');
    this.form = $('#eval-form');
    this.list = $('#evals-list');
    this.message = $('#evals-message');
    this.error = $('#eval-error');
    this.timer = null;
    this.form.addEventListener('submit', (e) => {
      e.preventDefault();
      this.submit();
    });
    $('#evals-refresh').addEventListener('click', () => this.load());
  }

  async loadModels() {
    const sel = $('#eval-model');
    let models = [];
    try {
      const data = await api.models();
      models = Array.isArray(data) ? data : (Array.isArray(data.models) ? data.models : []);
    } catch {
      models = [];
    }
    clear(sel);
    for (const m of models.filter((x) => x && typeof x.name === 'string' && x.name)) {
      sel.appendChild(h('option', { value: m.name, selected: Boolean(m.default) }, m.name));
    }
  }

  open() {
    show(this.el, true);
    this.loadModels();
    this.load();
  }

  close() {
    show(this.el, false);
    clearTimeout(this.timer);
    this.timer = null;
  }

  async load() {
    clearTimeout(this.timer);
    let data;
    try {
      data = await api.evals();
    } catch (e) {
      this.message.textContent = sentence(e.message);
      return;
    }
    const evals = Array.isArray(data.evals) ? data.evals : [];
    this.message.textContent = evals.length ? '' : 'No evaluations yet: start one above.';
    clear(this.list);
    for (const ev of evals) {
      const p = ev.progress || null;
      this.list.appendChild(h('li', { class: 'eval-item', dataset: { status: ev.status } },
        h('a', { class: 'eval-link', href: `#eval=${encodeURIComponent(ev.id)}` }, ev.name || ev.id),
        h('span', { class: `eval-status status-${ev.status}` }, statusLabel(ev.status)),
        h('span', { class: 'eval-meta' },
          `${(ev.options && ev.options.mode) || ''} · ${progressText(p)} · ${ago(ev.created_ms)}`),
        progressBar(p)));
    }
    if (evals.some((ev) => !isFinal(ev.status)) && !this.el.hidden) {
      this.timer = setTimeout(() => this.load(), POLL_MS);
    }
  }

  async submit() {
    show(this.error, false);
    const file = $('#eval-dataset').files[0];
    if (!file) {
      this.error.textContent = 'Choose a dataset file first.';
      show(this.error, true);
      return;
    }
    const form = new FormData();
    form.append('dataset', file, file.name);
    for (const [name, id] of [['mode', '#eval-mode'], ['model', '#eval-model'], ['layout', '#eval-layout'],
      ['repeats', '#eval-repeats'], ['concurrency', '#eval-concurrency'], ['limit', '#eval-limit']]) {
      const v = $(id).value;
      if (v !== '' && v !== undefined && v !== null) form.append(name, v);
    }
    const button = $('#eval-run');
    button.disabled = true;
    $('#eval-fields').disabled = true;
    try {
      const res = await api.evalCreate(form);
      location.hash = `#eval=${encodeURIComponent(res.id)}`;
    } catch (e) {
      // a dataset's problem starts with its file name: shown as the
      // server wrote it (sentence() would capitalise the name)
      const b = e.body;
      const raw = b && b.file && b.error && typeof b.error.message === 'string' ? b.error.message : '';
      this.error.textContent = raw ? `The dataset cannot run: ${raw}` : sentence(e.message);
      show(this.error, true);
    } finally {
      button.disabled = false;
      $('#eval-fields').disabled = false;
    }
  }
}

export class EvalView {
  constructor() {
    this.el = $('#eval-view');
    this.id = '';
    this.timer = null;
  }

  open(id) {
    this.id = id;
    show(this.el, true);
    clear(this.el);
    this.el.appendChild(h('p', { class: 'hint' }, 'Loading the evaluation…'));
    this.refresh();
  }

  close() {
    this.id = '';
    show(this.el, false);
    clearTimeout(this.timer);
    this.timer = null;
  }

  async refresh() {
    clearTimeout(this.timer);
    const id = this.id;
    if (!id) return;
    let ev;
    try {
      ev = await api.evalGet(id);
    } catch (e) {
      if (id !== this.id) return;
      clear(this.el);
      this.el.appendChild(h('div', { class: 'card form-card' },
        h('h1', { id: 'eval-title', class: 'view-title', tabindex: '-1' }, 'Evaluation'),
        h('p', { class: 'form-error' }, sentence(e.message)),
        h('a', { href: '#evals', class: 'button button-secondary' }, 'All evaluations')));
      return;
    }
    if (id !== this.id) return;
    this.render(ev);
    if (!isFinal(ev.status) || (ev.progress && (ev.progress.running || ev.progress.scoring))) {
      this.timer = setTimeout(() => this.refresh(), POLL_MS);
    }
  }

  render(ev) {
    clear(this.el);
    const p = ev.progress || null;
    const o = ev.options || {};
    const actions = h('div', { class: 'eval-actions' },
      h('a', { class: 'button button-secondary button-small', href: api.evalResults(ev.id), download: '' }, 'results.jsonl'),
      ev.summary ? h('a', { class: 'button button-secondary button-small', href: api.evalSummaryMd(ev.id), download: '' }, 'summary.md') : null,
      !isFinal(ev.status) ? h('button', {
        type: 'button', class: 'button button-secondary button-small', id: 'eval-cancel',
        onclick: async () => { try { await api.evalCancel(ev.id); } catch { /* shown on the next refresh */ } this.refresh(); },
      }, 'Cancel') : null,
      h('button', {
        type: 'button', class: 'button button-quiet button-small', id: 'eval-delete',
        onclick: async () => {
          if (!window.confirm('Delete this evaluation? Its tasks stay.')) return;
          try { await api.evalRemove(ev.id); location.hash = '#evals'; } catch (e) { window.alert(sentence(e.message)); }
        },
      }, 'Delete'));
    const eta = typeof ev.eta_s === 'number' && ev.eta_s > 0 ? ` · about ${duration(ev.eta_s * 1000)} left` : '';
    this.el.appendChild(h('div', { class: 'card form-card eval-head' },
      h('p', { class: 'eval-back' }, h('a', { href: '#evals' }, '← All evaluations')),
      h('h1', { id: 'eval-title', class: 'view-title', tabindex: '-1' }, ev.name || 'Evaluation'),
      h('p', { class: 'eval-meta' },
        h('span', { class: `eval-status status-${ev.status}` }, statusLabel(ev.status)),
        ` ${o.mode || ''} · model ${o.model || ''} · ${o.repeats || 1}× · concurrency ${o.concurrency || ''} · layout ${o.layout || ''}`),
      benchmarkLine(ev.name),
      progressBar(p),
      h('p', { class: 'hint', id: 'eval-progress-text' }, progressText(p) + eta),
      ev.error ? h('p', { class: 'form-error' }, sentence(ev.error)) : null,
      actions));
    if (ev.summary) this.el.appendChild(this.summary(ev.summary));
    this.el.appendChild(this.runs(ev.runs || [], p ? p.total : 0));
  }

  summary(s) {
    const card = h('div', { class: 'card form-card eval-summary', id: 'eval-summary' },
      h('h2', { class: 'section-title' }, 'Accuracy'));
    const modes = Array.isArray(s.modes) ? s.modes : [];
    const both = modes.includes('llm') && modes.includes('sandbox');
    const head = h('tr', null, h('th', { scope: 'col' }, 'Domain'),
      modes.includes('llm') ? h('th', { scope: 'col', class: 'num' }, 'LLM') : null,
      modes.includes('sandbox') ? h('th', { scope: 'col', class: 'num' }, 'Sandbox') : null,
      both ? h('th', { scope: 'col', class: 'num' }, 'Δ') : null,
      h('th', { scope: 'col', class: 'num' }, 'Rows'));
    const body = h('tbody');
    const domains = s.domains && typeof s.domains === 'object' ? s.domains : {};
    const names = Object.keys(domains).sort((a, b) => {
      const ia = DOMAIN_ORDER.indexOf(a), ib = DOMAIN_ORDER.indexOf(b);
      return (ia < 0 ? 99 : ia) - (ib < 0 ? 99 : ib) || a.localeCompare(b);
    });
    const row = (name, g, cls) => {
      const n = g && (g.llm || g.sandbox) ? (g.llm || g.sandbox).n : null;
      return h('tr', { class: cls || null },
        h('th', { scope: 'row' }, name),
        modes.includes('llm') ? h('td', { class: 'num' }, pct(g && g.llm && g.llm.accuracy)) : null,
        modes.includes('sandbox') ? h('td', { class: 'num' }, pct(g && g.sandbox && g.sandbox.accuracy)) : null,
        both ? deltaCell(g && g.delta) : null,
        h('td', { class: 'num' }, num(n)));
    };
    for (const name of names) body.appendChild(row(name, domains[name]));
    if (s.overall) body.appendChild(row('Overall', s.overall, 'eval-overall'));
    card.appendChild(h('div', { class: 'table-wrap' },
      h('table', { class: 'eval-table' }, h('thead', null, head), body)));

    // tokens and time (the paper's Tables 5 and 6), capability use (Appendix D)
    const t = s.tokens || {};
    const q = s.qpm || {};
    const c = s.capabilities || null;
    const facts = [
      ['Tokens per query, LLM', num(t.llm_per_query, 0)],
      ['Tokens per query, sandbox', num(t.sandbox_per_query, 0)],
      ['Token ratio (sandbox / LLM)', typeof t.ratio === 'number' ? `${t.ratio.toFixed(2)}×` : '—'],
      ['Environment share of tokens', share(s.env_token_share)],
      ['Execution share of time', share(s.exec_time_share)],
      ['Queries per minute, LLM', num(q.llm)],
      ['Queries per minute, sandbox', num(q.sandbox)],
      ['QPM ratio (sandbox / LLM)', typeof q.ratio === 'number' ? `${q.ratio.toFixed(2)}×` : '—'],
    ];
    if (c) {
      facts.push(['External resources (turns)', share(c.external)]);
      facts.push(['File management (turns)', share(c.file)]);
      facts.push(['Computation (turns)', share(c.compute)]);
    }
    card.appendChild(h('h2', { class: 'section-title eval-subtitle' }, 'Tokens and time'));
    card.appendChild(h('dl', { class: 'eval-facts', id: 'eval-facts' },
      facts.map(([k, v]) => [h('dt', null, k), h('dd', null, v)])));
    return card;
  }

  /** The runs table: the first page of runs (1,000; results.jsonl has them all). */
  runs(runs, total) {
    const body = h('tbody');
    // the Image column only when a row named its own image
    const images = runs.some((r) => r.image);
    for (const r of runs) {
      const score = typeof r.score === 'number' ? r.score.toFixed(2) : '—';
      const answer = r.answer ? h('details', { class: 'eval-answer' },
        h('summary', null, r.answer.length > 60 ? `${r.answer.slice(0, 60)}…` : r.answer),
        h('pre', null, r.answer + (r.answer_cut ? '\n…' : ''))) : (r.error ? h('span', { class: 'hint' }, r.error) : '—');
      body.appendChild(h('tr', { dataset: { status: r.status } },
        h('td', null, r.id),
        h('td', null, r.domain || ''),
        h('td', null, r.mode),
        images ? h('td', null, r.image || '—') : null,
        h('td', { class: 'num' }, String(r.repeat + 1)),
        h('td', null, r.status === 'done' && r.result_status === 'failed' ? 'failed' : r.status),
        h('td', { class: `num score${typeof r.score === 'number' ? (r.score >= 1 ? ' score-right' : r.score <= 0 ? ' score-wrong' : '') : ''}` }, score),
        h('td', { title: r.score_detail || '' }, r.scorer || ''),
        h('td', { class: 'eval-answer-cell' }, answer),
        h('td', null, r.task_id ? h('a', { class: 'eval-task-link', href: `#task=${encodeURIComponent(r.task_id)}` }, 'task') : '—')));
    }
    return h('div', { class: 'card form-card eval-runs' },
      h('h2', { class: 'section-title' }, 'Runs ', h('span', { class: 'section-count' },
        total > runs.length ? `(the first ${count(runs.length)} of ${count(total)}: results.jsonl has them all)`
          : `(${count(runs.length)})`)),
      h('div', { class: 'table-wrap' }, h('table', { class: 'eval-table', id: 'eval-runs' },
        h('thead', null, h('tr', null, ['Row', 'Domain', 'Mode', images ? 'Image' : null, '#', 'Status', 'Score', 'Scorer',
          'Answer', 'Task'].filter(Boolean).map((x) => h('th', { scope: 'col' }, x)))),
        body)));
  }
}
