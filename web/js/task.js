// The task view: header with the prompt and the actions (Stop, Run again,
// Delete), a live status line and a meter (turns, tokens, time), the results
// (answer, downloads, previews, the file tree) once the task has ended, and
// the step-by-step timeline fed by Server-Sent Events.
//
// The event stream is resumed from the last event seen: the browser's own
// reconnects send Last-Event-ID, and a new connection (after the server
// closed the stream, or a gap in the event ids) asks for ?last_event_id=N.
// Events at or below the last id seen are dropped, so nothing shows twice.

import { h, clear, show } from './dom.js';
import { api, ApiError, rememberTask } from './api.js';
import { clock, count, duration, dateTime, plural, sentence, bytes, modelLabel } from './format.js';
import { statusLabel, isFinal } from './status.js';
import { Timeline } from './timeline.js';
import { renderGallery, renderTree, summarize } from './artifacts.js';
import { renderThread } from './thread.js';
import { NetworkView, hasRules } from './network.js';

const EVENT_TYPES = ['status', 'model', 'tool', 'answer', 'artifacts', 'error', 'done', 'round'];
const RECONNECT_MS = 3000;

export class TaskView {
  constructor(root, { onFinished, onStatus, onStarted, onDeleted } = {}) {
    this.root = root;
    this.onFinished = onFinished || (() => {});
    this.onStatus = onStatus || (() => {});
    this.onStarted = onStarted || (() => {});
    this.onDeleted = onDeleted || (() => {});
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
    this.usage = { stream: [0, 0], task: [0, 0] }; // [prompt, completion] tokens
    this.sandboxMs = null;   // set when the sandbox has started
    this.answer = null;
    this.artifacts = null;
    this.lastSeq = 0;        // the last event id shown
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
    this.rerunButton = h('button', { type: 'button', class: 'button button-secondary', hidden: true, onclick: () => this.rerun() }, 'Run again');
    this.replayButton = h('button', {
      type: 'button', class: 'button button-secondary', hidden: true, onclick: () => this.rerun(true),
      title: 'Play this run\'s tool calls again in a fresh sandbox, without asking the model',
    }, 'Replay');
    this.deleteButton = h('button', { type: 'button', class: 'button button-quiet', hidden: true, onclick: () => this.askDelete() }, 'Delete');
    // follow-ups: a read-only link for someone without an account
    this.shareButton = h('button', { type: 'button', class: 'button button-quiet', hidden: true, onclick: () => this.share() }, 'Share');
    this.shareBox = h('p', { class: 'share-box', role: 'status', hidden: true });
    this.confirmBox = h('div', { class: 'confirm', role: 'group', 'aria-label': 'Delete this task?', hidden: true });
    this.actionMessage = h('p', { class: 'form-error', role: 'alert', hidden: true });
    this.promptEl = h('div', { class: 'task-prompt' });
    this.promptToggle = h('button', { type: 'button', class: 'link-button', hidden: true, 'aria-expanded': 'false', onclick: () => this.togglePrompt() }, 'Show the whole prompt');
    this.metaEl = h('dl', { class: 'task-meta' });
    this.spinner = h('span', { class: 'spinner', 'aria-hidden': 'true' });
    this.statusText = h('span', { class: 'status-text' }, 'Loading the task…');
    this.statusLine = h('p', { class: 'status-line', role: 'status', 'aria-live': 'polite' }, this.spinner, this.statusText);
    this.meterTurns = h('dd', null, '–');
    this.meterTokens = h('dd', null, '–');
    this.meterTime = h('dd', null, '–');
    this.meterSandbox = h('dd', null, '–');
    this.meter = h('dl', { class: 'meter', 'aria-label': 'Progress' },
      h('div', { class: 'meter-item' }, h('dt', null, 'Turns'), this.meterTurns),
      h('div', { class: 'meter-item' }, h('dt', null, 'Tokens'), this.meterTokens),
      h('div', { class: 'meter-item' }, h('dt', null, 'Time'), this.meterTime),
      h('div', { class: 'meter-item' }, h('dt', null, 'Sandbox'), this.meterSandbox));

    const head = h('div', { class: 'card task-head' },
      h('div', { class: 'task-head-top' },
        h('div', { class: 'task-title-row' },
          h('h1', { id: 'task-title', class: 'view-title', tabindex: '-1' }, 'Task'),
          this.chip),
        h('div', { class: 'task-actions' }, this.stopButton, this.rerunButton, this.replayButton, this.shareButton,
          this.deleteButton)),
      this.confirmBox,
      this.shareBox,
      this.statusLine,
      this.meter,
      this.actionMessage,
      this.promptEl,
      this.promptToggle,
      this.metaEl);

    this.answerEl = h('div', { class: 'answer' });
    this.downloadsEl = h('div', { class: 'downloads' });
    this.galleryCount = h('span', { class: 'section-count' });
    this.galleryEl = h('div', { class: 'gallery-wrap' });
    this.treeEl = h('div', { class: 'tree-wrap' });
    this.treeSection = h('section', { class: 'tree-section', 'aria-labelledby': 'tree-title', hidden: true },
      h('h2', { id: 'tree-title', class: 'section-title' }, 'All files by folder'),
      this.treeEl);
    this.results = h('section', { class: 'results', 'aria-labelledby': 'answer-title', hidden: true },
      h('div', { class: 'card answer-card' },
        h('h2', { id: 'answer-title', class: 'section-title' }, 'Answer'),
        this.answerEl,
        this.downloadsEl),
      h('div', { class: 'files-section' },
        h('h2', { class: 'section-title' }, 'Files ', this.galleryCount),
        this.galleryEl),
      this.treeSection);

    this.timelineList = h('ol', { class: 'timeline', 'aria-label': 'Steps' });
    this.timelineEmpty = h('p', { class: 'muted timeline-empty' }, 'Waiting for the first step…');
    this.stepsCount = h('span', { class: 'section-count' });
    const steps = h('section', { class: 'steps', 'aria-labelledby': 'steps-title' },
      h('h2', { id: 'steps-title', class: 'section-title' }, 'Steps ', this.stepsCount),
      this.timelineEmpty,
      this.timelineList);

    this.timeline = new Timeline(this.timelineList);
    // follow-ups: the rounds of the conversation and the message box
    this.threadEl = h('section', { class: 'thread', hidden: true });
    this.root.append(head, this.results, this.threadEl, steps);
    // a task with network rules: its sandbox's names and connections (network.js)
    this.network = new NetworkView();
    this.root.insertBefore(this.network.el, this.threadEl);
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
    const item = (k, v, title) => (v ? [h('div', { class: 'meta-item' }, h('dt', null, k), h('dd', { title: title || null }, v))] : []);
    const inputs = Array.isArray(task.inputs) ? task.inputs : [];
    const inputSize = inputs.reduce((s, f) => s + (Number(f && f.size) || 0), 0);
    const inputsText = inputs.length
      ? `${plural(inputs.length, 'file', 'files')}${inputSize ? `, ${bytes(inputSize)}` : ''}`
      : 'none';
    const inputsTitle = inputs.map((f) => (typeof f === 'string' ? f : (f && (f.path || f.name)) || '')).filter(Boolean).join('\n');
    this.metaEl.append(
      ...item('Model', task.model ? modelLabel(task.model) : ''),
      ...item('Created', dateTime(task.created_ms)),
      ...item('Max turns', task.max_turns ? count(task.max_turns) : ''),
      ...item('Inputs', inputsText, inputsTitle),
      ...item('Tokens', usageTokens(task.usage)),
      ...item('Time', usageTime(task.usage)),
      ...item('Network', task.network === 'nat' ? 'internet (outbound)' : ''),
      ...item('Network', hasRules(task) ? 'by rules (see Network below)' : ''),
      ...item('Image', task.image ? String(task.image) : ''),
      ...item('Run again of', task.rerun_of ? h('a', { href: `#task=${encodeURIComponent(task.rerun_of)}` }, String(task.rerun_of).slice(0, 8)) : ''),
      ...item('Id', h('span', { class: 'mono' }, String(task.id || this.id))),
    );
  }

  // ---- loading and streaming ---------------------------------------------------

  async load(id) {
    try {
      const task = await api.task(id);
      rememberTask(task);
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
    show(this.rerunButton, true);
    show(this.deleteButton, true);
    // A task that has already ended shows its results at once; the stream
    // then replays its steps into the timeline.
    if (isFinal(this.status)) this.end(this.status, this.reason);
    this.connect();
    if (hasRules(this.task)) { // the record while it runs, then once more at the end
      this.network.load(id);
      this.timers.push(setInterval(() => { if (!this.ended && this.id === id) this.network.load(id); }, 5000));
    }
    // The clock in the meter while the task runs.
    this.timers.push(setInterval(() => { if (!this.ended) this.renderMeter(); }, 1000));
  }

  /** Take turns, usage and answer from a task record. */
  absorb(task) {
    if (Number(task.turns) > this.turn) this.turn = Number(task.turns);
    if (task.usage) this.usage.task = [Number(task.usage.prompt_tokens) || 0, Number(task.usage.completion_tokens) || 0];
    if (typeof task.answer === 'string' && task.answer) this.answer = task.answer;
  }

  /** [prompt, completion] tokens: whichever source has seen more. */
  tokens() {
    const s = this.usage.stream;
    const t = this.usage.task;
    return s[0] + s[1] >= t[0] + t[1] ? s : t;
  }

  showGone() {
    this.ended = true;
    this.streamDone = true;
    this.chip.className = 'chip chip-neutral task-chip';
    this.chip.textContent = 'Not found';
    this.setStatusText('There is no task with this id. It may have been deleted, or the link is incomplete.', 'bad');
    this.promptEl.textContent = '';
    show(this.meter, false);
    show(this.stopButton, false);
    show(this.rerunButton, false);
    show(this.replayButton, false);
    show(this.deleteButton, false);
    show(this.timelineEmpty, false);
    this.root.querySelector('.steps').hidden = true;
  }

  connect() {
    if (this.streamDone || !this.id) return;
    const id = this.id;
    const es = new EventSource(api.eventsUrl(id, this.lastSeq));
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

  /** Starts a new stream after the last event shown (gaps, closed streams). */
  reconnect(wait) {
    if (this.es) { this.es.close(); this.es = null; }
    const id = this.id;
    this.later(() => { if (this.id === id && !this.es) this.connect(); }, wait);
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
        this.reconnect(RECONNECT_MS);
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
      rememberTask(task);
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
    this.reconnect(Math.min(RECONNECT_MS * this.failures, 30000));
  }

  handle(type, e) {
    const seq = Number.parseInt(e.lastEventId, 10);
    if (Number.isFinite(seq)) {
      if (seq <= this.lastSeq) return; // shown already (a replay after a reconnect)
      if (seq > this.lastSeq + 1) {
        // Event ids of a task have no holes; a jump means some were missed:
        // ask again from the last one shown.
        this.reconnect(0);
        return;
      }
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
        if (data.sandbox === 'ready') this.sandboxMs = Number(data.sandbox_ms) || 0;
        this.setStatus(data.status, data.reason);
        break;
      case 'model':
        this.timeline.addModel(data);
        if (Number(data.turn) > this.turn) this.turn = Number(data.turn);
        if (data.usage) {
          this.usage.stream[0] += Number(data.usage.prompt_tokens) || 0;
          this.usage.stream[1] += Number(data.usage.completion_tokens) || 0;
        }
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
      case 'round':
        // a message started the next round (from this page or another)
        this.timeline.addRound(data);
        if (this.ended) { this.reopen(); return; }
        break;
      case 'done':
        if (Number(data.round || 1) < Number((this.task && this.task.round) || 1)) {
          // an earlier round's end: the stream goes on with the next round
          this.timeline.endRound(data);
          this.reconnect(0);
          break;
        }
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
    if (this.timeline.size === 0 && !this.ended) this.timelineEmpty.textContent = this.phaseText() || 'Waiting for the first step…';
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
    show(this.replayButton, isFinal(status));
    show(this.shareButton, isFinal(status));
    this.onStatus(this.id, status);
    this.renderStatus();
  }

  setStatusText(text, tone = '') {
    this.statusText.textContent = text;
    this.statusLine.dataset.tone = tone;
    show(this.spinner, false);
  }

  /** Before the first turn: what the task is waiting for. */
  phaseText() {
    if (this.status === 'queued') return 'Queued — starting the agent…';
    if (this.status !== 'running' || this.turn) return '';
    if (this.sandboxMs === null) return 'Starting the sandbox…';
    return `Sandbox ready in ${duration(this.sandboxMs)} — waiting for the model's first reply…`;
  }

  renderStatus() {
    const s = this.status;
    const t = this.task || {};
    const reason = this.reason ? sentence(this.reason) : '';
    let text = '';
    let tone = '';
    if (s === 'queued' || (s === 'running' && !this.turn)) {
      text = this.phaseText();
      tone = 'live';
    } else if (s === 'running') {
      const max = t.max_turns ? ` of ${count(t.max_turns)}` : '';
      text = `Running — turn ${count(this.turn)}${max}`;
      tone = 'live';
    } else if (s === 'succeeded') {
      const took = t.finished_ms && t.started_ms && t.finished_ms - t.started_ms >= 1000
        ? ` in ${duration(t.finished_ms - t.started_ms)}` : '';
      text = `Finished${took} after ${plural(this.turn, 'turn', 'turns')}.${reason ? ` ${reason}` : ''}`;
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
    this.renderMeter();
  }

  renderMeter() {
    const t = this.task || {};
    const max = t.max_turns ? ` / ${count(t.max_turns)}` : '';
    this.meterTurns.textContent = `${count(this.turn)}${max}`;
    const [pin, pout] = this.tokens();
    this.meterTokens.textContent = pin + pout ? count(pin + pout) : '–';
    this.meterTokens.title = pin + pout ? `${count(pin)} in, ${count(pout)} out` : '';
    const start = Number(t.started_ms || t.created_ms);
    const end = isFinal(this.status) ? Number(t.finished_ms) || 0 : Date.now();
    this.meterTime.textContent = start && end >= start ? clock(end - start) : '–';
    this.meterSandbox.textContent = this.sandboxMs !== null ? `started in ${duration(this.sandboxMs)}`
      : this.status === 'running' || this.status === 'queued' ? 'starting…' : '–';
  }

  // ---- actions ------------------------------------------------------------------

  showActionMessage(text) {
    this.actionMessage.textContent = text ? sentence(text) : '';
    show(this.actionMessage, Boolean(text));
  }

  async stop() {
    const id = this.id;
    this.stopButton.disabled = true;
    this.stopButton.textContent = 'Stopping…';
    this.showActionMessage('');
    try {
      await api.cancel(id);
    } catch (e) {
      if (this.id !== id) return;
      if (e instanceof ApiError && e.status === 409) {
        this.showActionMessage('The task had already finished, so there was nothing to stop.');
      } else {
        this.showActionMessage(`The task could not be stopped. ${e.message}`);
        this.stopButton.disabled = false;
        this.stopButton.textContent = 'Stop';
      }
    }
  }

  /** "Run again" (the model again), or with replay "Replay" (the recorded tool calls, no model). */
  async rerun(replay = false) {
    const id = this.id;
    const button = replay ? this.replayButton : this.rerunButton;
    const label = button.textContent;
    button.disabled = true;
    button.textContent = 'Starting…';
    this.showActionMessage('');
    try {
      const task = await api.rerun(id, replay);
      if (this.id !== id) return;
      this.onStarted(task.id);
    } catch (e) {
      if (this.id !== id) return;
      this.showActionMessage(`The task could not be ${replay ? 'replayed' : 'run again'}. ${e.message}`);
    } finally {
      button.disabled = false;
      button.textContent = label;
    }
  }

  /** Asks in place before deleting (no modal dialog). */
  askDelete() {
    clear(this.confirmBox);
    const running = !isFinal(this.status);
    const yes = h('button', { type: 'button', class: 'button button-danger button-small' }, running ? 'Stop and delete' : 'Delete');
    const no = h('button', { type: 'button', class: 'button button-quiet button-small' }, 'Keep');
    this.confirmBox.append(
      h('span', null, running ? 'This task is still running. Stop it and delete it with all its files?'
        : 'Delete this task with its inputs, outputs and steps? This cannot be undone.'),
      yes, no);
    show(this.confirmBox, true);
    this.deleteButton.setAttribute('aria-expanded', 'true');
    const close = () => {
      show(this.confirmBox, false);
      this.deleteButton.setAttribute('aria-expanded', 'false');
      this.deleteButton.focus();
    };
    no.addEventListener('click', close);
    this.confirmBox.onkeydown = (e) => { if (e.key === 'Escape') close(); };
    yes.addEventListener('click', async () => {
      const id = this.id;
      yes.disabled = true;
      no.disabled = true;
      try {
        await api.remove(id);
      } catch (e) {
        if (!(e instanceof ApiError && e.status === 404)) {
          if (this.id !== id) return;
          this.showActionMessage(`The task could not be deleted. ${e.message}`);
          yes.disabled = false;
          no.disabled = false;
          return;
        }
      }
      if (this.id === id) this.close();
      this.onDeleted(id);
    });
    yes.focus();
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
      rememberTask(task);
      if (this.id !== id) return;
      this.task = task;
      this.renderHead(task);
      this.absorb(task);
      if (isFinal(task.status)) this.setStatus(task.status, task.reason ?? reason);
      else this.renderStatus();
    } catch { /* keep what the stream told us */ }
    if (this.id !== id) return;
    this.renderMeter();
    this.renderResults();
    this.renderThread();
    if (hasRules(this.task)) this.network.load(id);
    this.onFinished(id);
  }

  /** The conversation's rounds and the message box (thread.js). */
  renderThread() {
    if (!this.task) return;
    show(this.threadEl, true);
    renderThread(this.threadEl, this.task, { onSent: () => this.reopen(), onFork: (n) => this.fork(n) });
  }

  /** A new task from the conversation as at the end of round n. */
  async fork(n) {
    const id = this.id;
    this.showActionMessage('');
    try {
      const task = await api.fork(id, n);
      if (this.id !== id) return;
      this.onStarted(task.id);
    } catch (e) {
      if (this.id === id) this.showActionMessage(`The task could not be forked. ${e.message}`);
    }
  }

  /** A share link: shown with its expiry, to copy. */
  async share() {
    const id = this.id;
    this.shareButton.disabled = true;
    try {
      const s = await api.share(id);
      if (this.id !== id) return;
      const url = new URL(`/shared.html#${s.id}`, location.href).href;
      clear(this.shareBox);
      this.shareBox.append('Anyone with this link can read the task until ',
        dateTime(s.expires_ms), ': ', h('a', { href: url, class: 'mono share-url', target: '_blank', rel: 'noopener' }, url),
        '. Deleting the task ends it.');
      show(this.shareBox, true);
    } catch (e) {
      if (this.id === id) this.showActionMessage(`No share link could be made. ${e.message}`);
    } finally {
      this.shareButton.disabled = false;
    }
  }

  /** Shows the task again from its start: a new round has begun. */
  reopen() {
    const id = this.id;
    this.close();
    this.open(id);
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
      h('a', { class: 'button button-primary', href: api.bundleZip(id), download: `llmbox-${id.slice(0, 8)}.zip` }, 'Download all (.zip)'),
      h('a', { class: 'button button-secondary', href: api.bundleTgz(id), download: `llmbox-${id.slice(0, 8)}.tar.gz`, 'aria-label': 'Download all (.tar.gz)' }, '.tar.gz'),
      h('a', { class: 'button button-quiet', href: api.trajectory(id), download: `trajectory-${id.slice(0, 8)}.json` }, 'trajectory.json'),
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
    show(this.treeSection, renderTree(this.treeEl, id, this.artifacts));
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
