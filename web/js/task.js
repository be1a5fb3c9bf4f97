// The task view: header with the prompt and a Stop button, a live status
// line, the results (answer, downloads, artifact gallery) once the task has
// ended, and the step-by-step timeline fed by Server-Sent Events.

import { h, clear, show } from './dom.js';
import { api, ApiError } from './api.js';
import { count, duration, dateTime, plural, sentence, bytes } from './format.js';
import { statusLabel, isFinal } from './status.js';
import { Timeline } from './timeline.js';
import { renderGallery, summarize } from './artifacts.js';

const EVENT_TYPES = ['status', 'model', 'tool', 'answer', 'artifacts', 'error', 'done'];
const RECONNECT_MS = 3000;

export class TaskView {
  constructor(root, { onFinished, onStatus } = {}) {
    this.root = root;
    this.onFinished = onFinished || (() => {});
    this.onStatus = onStatus || (() => {});
    this.id = '';
    this.es = null;
    this.timers = [];
  }

  close() {
    if (this.es) { this.es.close(); this.es = null; }
    for (const t of this.timers) { clearTimeout(t); clearInterval(t); }
    this.timers = [];
    this.id = '';
  }

  open(id) {
    if (this.id === id) return;
    this.close();
    this.id = id;
    this.task = null;
    this.status = '';
    this.reason = '';
    this.turn = 0;
    this.streamTokens = 0;
    this.taskTokens = 0;
    this.answer = null;
    this.artifacts = null;
    this.lastSeq = -1;
    this.ended = false;      // the task is over and its results are shown
    this.streamDone = false; // the event stream delivered "done"
    this.retries = 0;
    this.failures = 0;
    this.connectionNote = '';
    this.build();
    this.load(id);
  }

  later(fn, ms) {
    const t = setTimeout(fn, ms);
    this.timers.push(t);
    return t;
  }

  // ---- layout ----------------------------------------------------------------

  build() {
    clear(this.root);
    this.chip = h('span', { class: 'chip chip-neutral task-chip' }, 'Loading');
    this.stopButton = h('button', { type: 'button', class: 'button button-danger', hidden: true, onclick: () => this.stop() }, 'Stop');
    this.stopMessage = h('p', { class: 'form-error', role: 'alert', hidden: true });
    this.promptEl = h('div', { class: 'task-prompt' });
    this.promptToggle = h('button', { type: 'button', class: 'link-button', hidden: true, 'aria-expanded': 'false', onclick: () => this.togglePrompt() }, 'Show the whole prompt');
    this.metaEl = h('dl', { class: 'task-meta' });
    this.spinner = h('span', { class: 'spinner', 'aria-hidden': 'true' });
    this.statusText = h('span', { class: 'status-text' }, 'Loading the task…');
    this.statusLine = h('p', { class: 'status-line', role: 'status', 'aria-live': 'polite' }, this.spinner, this.statusText);

    const head = h('div', { class: 'card task-head' },
      h('div', { class: 'task-head-top' },
        h('div', { class: 'task-title-row' },
          h('h1', { id: 'task-title', class: 'view-title', tabindex: '-1' }, 'Task'),
          this.chip),
        h('div', { class: 'task-actions' }, this.stopButton)),
      this.statusLine,
      this.stopMessage,
      this.promptEl,
      this.promptToggle,
      this.metaEl);

    this.answerEl = h('div', { class: 'answer' });
    this.downloadsEl = h('div', { class: 'downloads' });
    this.galleryCount = h('span', { class: 'section-count' });
    this.galleryEl = h('div', { class: 'gallery-wrap' });
    this.results = h('section', { class: 'results', 'aria-labelledby': 'answer-title', hidden: true },
      h('div', { class: 'card answer-card' },
        h('h2', { id: 'answer-title', class: 'section-title' }, 'Answer'),
        this.answerEl,
        this.downloadsEl),
      h('div', { class: 'files-section' },
        h('h2', { class: 'section-title' }, 'Files ', this.galleryCount),
        this.galleryEl));

    this.timelineList = h('ol', { class: 'timeline', 'aria-label': 'Steps' });
    this.timelineEmpty = h('p', { class: 'muted timeline-empty' }, 'Waiting for the first step…');
    this.stepsCount = h('span', { class: 'section-count' });
    const steps = h('section', { class: 'steps', 'aria-labelledby': 'steps-title' },
      h('h2', { id: 'steps-title', class: 'section-title' }, 'Steps ', this.stepsCount),
      this.timelineEmpty,
      this.timelineList);

    this.timeline = new Timeline(this.timelineList);
    this.root.append(head, this.results, steps);
  }

  togglePrompt() {
    const open = this.promptEl.classList.toggle('is-open');
    this.promptToggle.setAttribute('aria-expanded', String(open));
    this.promptToggle.textContent = open ? 'Show less' : 'Show the whole prompt';
  }

  renderHead(task) {
    const prompt = String(task.prompt || '');
    this.promptEl.textContent = prompt || '(no prompt)';
    const long = prompt.length > 420 || prompt.split('\n').length > 6;
    this.promptEl.classList.toggle('is-clamped', long);
    show(this.promptToggle, long);

    clear(this.metaEl);
    const item = (k, v) => (v ? [h('div', { class: 'meta-item' }, h('dt', null, k), h('dd', null, v))] : []);
    const inputs = Array.isArray(task.inputs) ? task.inputs : [];
    const inputSize = inputs.reduce((s, f) => s + (Number(f && f.size) || 0), 0);
    const inputsText = inputs.length
      ? `${plural(inputs.length, 'file', 'files')}${inputSize ? `, ${bytes(inputSize)}` : ''}`
      : 'none';
    const inputsTitle = inputs.map((f) => (typeof f === 'string' ? f : (f && (f.path || f.name)) || '')).filter(Boolean).join('\n');
    this.metaEl.append(
      ...item('Model', task.model ? String(task.model) : ''),
      ...item('Created', dateTime(task.created_ms)),
      ...item('Max turns', task.max_turns ? count(task.max_turns) : ''),
      ...item('Inputs', inputsText),
      ...item('Tokens', usageTokens(task.usage)),
      ...item('Time', usageTime(task.usage)),
      ...item('Id', String(task.id || this.id)),
    );
    if (inputsTitle) {
      const dd = [...this.metaEl.querySelectorAll('dt')].find((d) => d.textContent === 'Inputs');
      if (dd) dd.nextSibling.title = inputsTitle;
    }
  }

  // ---- loading and streaming ---------------------------------------------------

  async load(id) {
    try {
      const task = await api.task(id);
      if (this.id !== id) return;
      this.task = task;
      this.renderHead(task);
      this.absorb(task);
      this.setStatus(task.status, task.reason);
    } catch (e) {
      if (this.id !== id) return;
      if (e instanceof ApiError && e.status === 404) {
        this.showGone();
        return;
      }
      this.setStatusText(`The task could not be loaded. ${e.message}`, 'bad');
      this.later(() => { if (this.id === id) { this.id = ''; this.open(id); } }, RECONNECT_MS * 2);
      return;
    }
    // A task that has already ended shows its results at once; the stream
    // then replays its steps into the timeline.
    if (isFinal(this.status)) this.end(this.status, this.reason);
    this.connect();
    // Elapsed time in the status line while the task runs.
    this.timers.push(setInterval(() => { if (!this.ended) this.renderStatus(); }, 1000));
  }

  get tokens() {
    return Math.max(this.streamTokens, this.taskTokens);
  }

  /** Take turns, usage and answer from a task record. */
  absorb(task) {
    if (Number(task.turns) > this.turn) this.turn = Number(task.turns);
    if (task.usage) this.taskTokens = usageTotal(task.usage);
    if (typeof task.answer === 'string' && task.answer) this.answer = task.answer;
  }

  showGone() {
    this.ended = true;
    this.streamDone = true;
    this.chip.className = 'chip chip-neutral task-chip';
    this.chip.textContent = 'Not found';
    this.setStatusText('There is no task with this id. It may have been deleted, or the link is incomplete.', 'bad');
    this.promptEl.textContent = '';
    show(this.timelineEmpty, false);
    this.root.querySelector('.steps').hidden = true;
  }

  connect() {
    if (this.streamDone || !this.id) return;
    const id = this.id;
    const es = new EventSource(api.eventsUrl(id));
    this.es = es;
    for (const type of EVENT_TYPES) {
      es.addEventListener(type, (e) => {
        if (this.es !== es) return;
        // The browser fires a plain "error" Event on connection trouble; the
        // server's own "error" events are MessageEvents with data.
        if (type === 'error' && !(e instanceof MessageEvent)) {
          this.connectionTrouble(es);
          return;
        }
        this.handle(type, e);
      });
    }
    es.addEventListener('open', () => {
      if (this.connectionNote) { this.connectionNote = ''; this.renderStatus(); }
    });
  }

  async connectionTrouble(es) {
    if (this.streamDone) { es.close(); return; }
    if (es.readyState === EventSource.CONNECTING) {
      // The browser reconnects by itself, sending Last-Event-ID.
      if (!this.ended) {
        this.connectionNote = 'connection lost; reconnecting…';
        this.renderStatus();
      }
      return;
    }
    // Closed for good (the server refused the stream): look at the task and
    // either show its final state or try again shortly.
    es.close();
    if (this.es === es) this.es = null;
    const id = this.id;
    if (this.ended) {
      // Results are shown already; only the replayed steps are missing.
      if (this.retries++ < 3) {
        this.later(() => { if (this.id === id && !this.es) this.connect(); }, RECONNECT_MS);
      } else {
        this.streamDone = true;
        this.timeline.finish();
        if (this.timeline.size === 0) this.timelineEmpty.textContent = 'The step-by-step log could not be loaded.';
      }
      return;
    }
    this.connectionNote = 'the live connection was lost; retrying';
    this.renderStatus();
    try {
      const task = await api.task(id);
      if (this.id !== id || this.es || this.ended) return;
      this.task = task;
      this.absorb(task);
      if (isFinal(task.status)) {
        this.connectionNote = '';
        this.end(task.status, task.reason);
      }
    } catch (e) {
      if (this.id !== id) return;
      if (e instanceof ApiError && e.status === 404) { this.showGone(); return; }
    }
    // Back off gently: 3 s, 6 s, … up to 30 s between attempts.
    this.failures = (this.failures || 0) + 1;
    const wait = Math.min(RECONNECT_MS * this.failures, 30000);
    this.later(() => { if (this.id === id && !this.es) this.connect(); }, wait);
  }

  handle(type, e) {
    const seq = Number.parseInt(e.lastEventId, 10);
    if (Number.isFinite(seq)) {
      if (seq <= this.lastSeq) return;
      this.lastSeq = seq;
    }
    let data;
    try { data = JSON.parse(e.data); } catch { return; }
    if (!data || typeof data !== 'object') return;
    if (this.connectionNote) this.connectionNote = '';
    this.failures = 0;

    const atBottom = nearBottom();
    switch (type) {
      case 'status':
        this.setStatus(data.status, data.reason);
        break;
      case 'model':
        this.timeline.addModel(data);
        if (Number(data.turn) > this.turn) this.turn = Number(data.turn);
        if (data.usage) this.streamTokens += usageTotal(data.usage);
        if (this.status === 'queued') this.setStatus('running');
        else this.renderStatus();
        break;
      case 'tool':
        this.timeline.addTool(data);
        break;
      case 'answer':
        this.answer = typeof data.answer === 'string' ? data.answer : str(data.answer);
        break;
      case 'artifacts':
        if (Array.isArray(data.artifacts)) this.artifacts = data.artifacts;
        break;
      case 'error':
        this.timeline.addError(sentence(data.message || 'The task reported an error.'));
        break;
      case 'done':
        this.streamDone = true;
        if (this.es) { this.es.close(); this.es = null; }
        this.timeline.finish();
        if (this.timeline.size === 0) this.timelineEmpty.textContent = 'No steps were recorded.';
        if (!this.ended) this.end(data.status || this.status, data.reason);
        break;
      default:
        break;
    }
    show(this.timelineEmpty, this.timeline.size === 0);
    this.stepsCount.textContent = this.turn ? `(${plural(this.turn, 'turn', 'turns')})` : '';
    if (atBottom && !this.ended && type !== 'done') scrollToBottom();
  }

  // ---- status ------------------------------------------------------------------

  setStatus(status, reason) {
    if (!status) return;
    // Once the task is known to be over, replayed older states do not count.
    if (this.ended && isFinal(this.status) && !isFinal(status)) return;
    this.status = status;
    if (reason !== undefined && reason !== null) this.reason = String(reason);
    this.chip.className = `chip task-chip chip-${chipKind(status)}`;
    this.chip.textContent = statusLabel(status);
    show(this.stopButton, !isFinal(status));
    this.onStatus(this.id, status);
    this.renderStatus();
  }

  setStatusText(text, tone = '') {
    this.statusText.textContent = text;
    this.statusLine.dataset.tone = tone;
    show(this.spinner, false);
  }

  renderStatus() {
    const s = this.status;
    const t = this.task || {};
    const tokens = this.tokens ? ` · ${count(this.tokens)} tokens used` : '';
    const reason = this.reason ? sentence(this.reason) : '';
    let text = '';
    let tone = '';
    if (s === 'queued') {
      text = 'Starting the sandbox…';
      tone = 'live';
    } else if (s === 'running') {
      const max = t.max_turns ? ` of ${count(t.max_turns)}` : '';
      const started = Number(t.started_ms || t.created_ms);
      const elapsed = started ? ` · ${duration(Math.max(0, Date.now() - started))}` : '';
      text = this.turn
        ? `Running — turn ${count(this.turn)}${max}${tokens}${elapsed}`
        : `Running — waiting for the model's first reply${elapsed}`;
      tone = 'live';
    } else if (s === 'succeeded') {
      const took = t.finished_ms && t.started_ms && t.finished_ms - t.started_ms >= 1000
        ? ` in ${duration(t.finished_ms - t.started_ms)}` : '';
      text = `Finished${took} after ${plural(this.turn, 'turn', 'turns')}${tokens}.${reason ? ` ${reason}` : ''}`;
      tone = 'ok';
    } else if (s === 'failed') {
      text = `Failed after ${plural(this.turn, 'turn', 'turns')}: ${reason || 'no reason was given.'}`;
      tone = 'bad';
    } else if (s === 'cancelled') {
      text = `Stopped after ${plural(this.turn, 'turn', 'turns')}: ${reason || 'cancelled on request.'}`;
      tone = 'warn';
    } else {
      text = 'Loading the task…';
    }
    if (this.connectionNote && !isFinal(s)) text += ` (${this.connectionNote})`;
    this.statusText.textContent = text;
    this.statusLine.dataset.tone = tone;
    show(this.spinner, tone === 'live');
  }

  async stop() {
    const id = this.id;
    this.stopButton.disabled = true;
    this.stopButton.textContent = 'Stopping…';
    show(this.stopMessage, false);
    try {
      await api.cancel(id);
    } catch (e) {
      if (this.id !== id) return;
      if (e instanceof ApiError && e.status === 409) {
        this.stopMessage.textContent = 'The task had already finished, so there was nothing to stop.';
      } else {
        this.stopMessage.textContent = `The task could not be stopped. ${e.message}`;
        this.stopButton.disabled = false;
        this.stopButton.textContent = 'Stop';
      }
      show(this.stopMessage, true);
    }
  }

  // ---- end and results -----------------------------------------------------------

  async end(status, reason) {
    if (this.ended) return;
    this.setStatus(status, reason);
    this.ended = true;
    this.connectionNote = '';
    show(this.stopButton, false);
    this.timeline.finish();
    const id = this.id;
    try {
      const task = await api.task(id);
      if (this.id !== id) return;
      this.task = task;
      this.renderHead(task);
      this.absorb(task);
      if (isFinal(task.status)) this.setStatus(task.status, task.reason ?? reason);
      else this.renderStatus();
    } catch { /* keep what the stream told us */ }
    if (this.id !== id) return;
    this.renderResults();
    this.onFinished(id);
  }

  async renderResults() {
    const id = this.id;
    show(this.results, true);
    clear(this.answerEl);
    const answer = typeof this.answer === 'string' ? this.answer.trim() : '';
    if (answer) {
      this.answerEl.appendChild(h('div', { class: 'text-block answer-text' }, answer));
    } else {
      const why = this.status === 'succeeded' ? 'The model finished without giving an answer.'
        : this.status === 'cancelled' ? 'The task was stopped before the model gave an answer.'
          : 'The task ended before the model gave an answer.';
      this.answerEl.appendChild(h('p', { class: 'muted' }, why));
    }

    clear(this.downloadsEl);
    this.downloadsEl.append(
      h('a', { class: 'button button-primary', href: api.bundleZip(id), download: `llmbox-${id}.zip` }, 'Download all (.zip)'),
      h('a', { class: 'button button-secondary', href: api.bundleTgz(id), download: `llmbox-${id}.tar.gz`, 'aria-label': 'Download all (.tar.gz)' }, '.tar.gz'),
      h('a', { class: 'button button-quiet', href: api.trajectory(id), download: `trajectory-${id}.json` }, 'trajectory.json'),
    );

    clear(this.galleryEl);
    this.galleryEl.appendChild(h('p', { class: 'muted' }, 'Loading the files…'));
    let artifacts = this.artifacts;
    try {
      const data = await api.artifacts(id);
      artifacts = Array.isArray(data) ? data : data.artifacts;
    } catch (e) {
      if (this.id !== id) return;
      if (!artifacts) {
        clear(this.galleryEl);
        this.galleryEl.appendChild(h('p', { class: 'form-error' }, `The list of files could not be loaded. ${e.message}`));
        return;
      }
    }
    if (this.id !== id) return;
    this.artifacts = artifacts || [];
    this.galleryCount.textContent = this.artifacts.length ? `(${summarize(this.artifacts)})` : '';
    renderGallery(this.galleryEl, id, this.artifacts);
  }
}

/** "12,345 prompt · 1,234 completion · 2,345 environment (est.)": the
 * paper's accounting, once the task has used the model. */
function usageTokens(u) {
  if (!u || !(Number(u.prompt_tokens) || Number(u.completion_tokens) || Number(u.environment_tokens))) return '';
  const parts = [`${count(u.prompt_tokens)} prompt`, `${count(u.completion_tokens)} completion`];
  if (u.environment_tokens !== undefined) {
    parts.push(`${count(u.environment_tokens)} environment${u.environment_estimated ? ' (est.)' : ''}`);
  }
  return parts.join(' · ');
}

/** "model 12 s · tools 4.5 s": where the time went. */
function usageTime(u) {
  if (!u || u.model_ms === undefined) return '';
  return `model ${duration(u.model_ms) || '0 ms'} · tools ${duration(u.tools_ms) || '0 ms'}`;
}

function usageTotal(u) {
  if (!u || typeof u !== 'object') return 0;
  if (Number.isFinite(Number(u.total_tokens)) && u.total_tokens !== undefined) return Number(u.total_tokens);
  return (Number(u.prompt_tokens) || 0) + (Number(u.completion_tokens) || 0);
}

function str(v) {
  if (v === undefined || v === null) return '';
  return typeof v === 'string' ? v : JSON.stringify(v);
}

function chipKind(status) {
  switch (status) {
    case 'succeeded': return 'ok';
    case 'failed': return 'bad';
    case 'cancelled': return 'warn';
    case 'running':
    case 'queued': return 'live';
    default: return 'neutral';
  }
}

/** True when the reader has scrolled down to the newest step (so follow it). */
function nearBottom() {
  const doc = document.documentElement;
  return window.scrollY > 0 && window.innerHeight + window.scrollY >= doc.scrollHeight - 120;
}

function scrollToBottom() {
  const reduce = window.matchMedia('(prefers-reduced-motion: reduce)').matches;
  window.scrollTo({ top: document.documentElement.scrollHeight, behavior: reduce ? 'auto' : 'smooth' });
}
