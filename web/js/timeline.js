// The step-by-step timeline of a task: one card per model turn, with the
// model's text, its reasoning and each tool call with its result.
// All model and sandbox text is hostile: it only ever goes in as text.

import { h, clear } from './dom.js';
import { count, duration } from './format.js';
import { toolChipKind } from './status.js';

const MAX_TEXT = 200000; // characters rendered per block; the rest is summarised
const ROUND_KEY = 100000; // turn keys per round (no round has this many turns)

/** A call's key: a model may use the same call ids in two rounds. */
function callKey(id, round) {
  return `${Number(round) > 1 ? Number(round) : 1}:${id}`;
}

export class Timeline {
  constructor(list) {
    this.list = list;
    this.turns = new Map(); // turn -> {card, body, calls}
    this.calls = new Map(); // call_id -> call view
    this.live = true;
  }

  reset() {
    clear(this.list);
    this.turns.clear();
    this.calls.clear();
  }

  get size() {
    return this.list.childElementCount;
  }

  /** The task has ended: calls still waiting for a result will not get one. */
  finish() {
    this.live = false;
    for (const call of this.calls.values()) {
      if (!call.done) {
        call.chip.className = 'chip chip-neutral';
        call.chip.textContent = 'no result';
      }
    }
  }

  ensureTurn(turn, round = 1) {
    // turns count from 1 in every round of a conversation: the key orders
    // them by round, then turn
    const r = Number(round) > 1 ? Number(round) : 1;
    const n = Number.isFinite(Number(turn)) ? Number(turn) : this.turns.size + 1;
    const key = (r - 1) * ROUND_KEY + n;
    let t = this.turns.get(key);
    if (t) return t;
    const meta = h('span', { class: 'turn-meta' });
    const body = h('div', { class: 'turn-body' });
    const calls = h('div', { class: 'calls' });
    const card = h('li', { class: 'turn card', dataset: { turn: key } },
      h('header', { class: 'turn-head' },
        h('h3', { class: 'turn-title' }, r > 1 ? `Round ${r} · turn ${n}` : `Turn ${n}`),
        meta),
      body,
      calls);
    t = { key, card, body, calls, meta };
    this.turns.set(key, t);
    // Keep turns in order even if events arrive out of order.
    let before = null;
    for (const other of this.list.children) {
      const n = Number(other.dataset.turn);
      if (Number.isFinite(n) && n > key) { before = other; break; }
    }
    this.list.insertBefore(card, before);
    return t;
  }

  /** A divider where a round begins: its number and its message. */
  addRound(ev) {
    const r = Number(ev.round) || 1;
    const key = (r - 1) * ROUND_KEY;
    if (this.list.querySelector(`[data-turn="${key}"]`)) return;
    const el = h('li', { class: 'round-divider', dataset: { turn: key }, role: 'note' },
      h('strong', null, `Round ${r}: `), String(ev.prompt || ''));
    let before = null;
    for (const other of this.list.children) {
      const k = Number(other.dataset.turn);
      if (Number.isFinite(k) && k > key) { before = other; break; }
    }
    this.list.insertBefore(el, before);
  }

  /** An earlier round ended: calls still waiting belong to it and are over. */
  endRound() {
    for (const call of this.calls.values()) {
      if (!call.done) {
        call.chip.className = 'chip chip-neutral';
        call.chip.textContent = 'no result';
        call.done = true;
      }
    }
  }

  addModel(ev) {
    const t = this.ensureTurn(ev.turn, ev.round);
    const bits = [];
    if (ev.duration_ms !== undefined) bits.push(duration(ev.duration_ms));
    const u = ev.usage || {};
    if (u.prompt_tokens !== undefined || u.completion_tokens !== undefined) {
      bits.push(`${count(u.prompt_tokens)} in · ${count(u.completion_tokens)} out tokens`);
    }
    t.meta.textContent = bits.join(' · ');

    clear(t.body);
    const reasoning = typeof ev.reasoning === 'string' ? ev.reasoning.trim() : '';
    if (reasoning) {
      t.body.appendChild(h('details', { class: 'reasoning' },
        h('summary', null, 'Reasoning'),
        textBlock(reasoning, 'reasoning-text')));
    }
    const content = typeof ev.content === 'string' ? ev.content.trim() : '';
    if (content) t.body.appendChild(textBlock(content, 'model-text'));

    const calls = Array.isArray(ev.tool_calls) ? ev.tool_calls : [];
    if (!content && !reasoning && !calls.length) {
      t.body.appendChild(h('p', { class: 'muted' }, 'The model replied with no text and no tool call.'));
    }
    for (const c of calls) {
      if (c && typeof c === 'object') this.ensureCall(t, c.id, c.name, c.arguments, ev.round);
    }
  }

  addTool(ev) {
    let call = this.calls.get(callKey(ev.call_id, ev.round));
    if (!call) call = this.ensureCall(this.ensureTurn(ev.turn, ev.round), ev.call_id, ev.name, ev.arguments, ev.round);
    setResult(call, ev);
  }

  addError(message) {
    this.list.appendChild(h('li', { class: 'timeline-error card', role: 'note' },
      h('strong', null, 'Error: '),
      String(message || 'Something went wrong.')));
  }

  ensureCall(turn, id, name, rawArgs, round = 1) {
    const key = id ? callKey(id, round) : `anon-${this.calls.size}`;
    let call = this.calls.get(key);
    if (call) return call;
    const toolName = String(name || 'tool');
    const args = parseArgs(rawArgs);
    const chip = h('span', { class: 'chip chip-live' }, this.live ? 'running…' : 'no result');
    const time = h('span', { class: 'call-time' });
    const output = h('div', { class: 'call-output' });
    const el = h('div', { class: 'call', dataset: { tool: toolName } },
      h('div', { class: 'call-head' },
        h('span', { class: 'tool-name' }, toolName),
        summaryFor(toolName, args),
        h('span', { class: 'call-status' }, chip, time)),
      argsView(toolName, args),
      output);
    turn.calls.appendChild(el);
    call = { el, chip, time, output, name: toolName, done: false };
    this.calls.set(key, call);
    return call;
  }
}

function parseArgs(raw) {
  if (raw && typeof raw === 'object') return raw;
  if (typeof raw === 'string') {
    const s = raw.trim();
    if (!s) return {};
    try {
      const v = JSON.parse(s);
      if (v && typeof v === 'object') return v;
    } catch { /* shown raw below */ }
    return { _raw: raw };
  }
  return {};
}

function str(v) {
  if (v === undefined || v === null) return '';
  return typeof v === 'string' ? v : JSON.stringify(v, null, 2);
}

function capped(text) {
  const s = str(text);
  if (s.length <= MAX_TEXT) return s;
  return `${s.slice(0, MAX_TEXT)}\n… (${count(s.length - MAX_TEXT)} more characters not shown)`;
}

function textBlock(text, cls) {
  return h('div', { class: `text-block ${cls}` }, capped(text));
}

function codeBlock(text, cls = '', label = '') {
  return h('pre', { class: `code ${cls}`, tabindex: '0', 'aria-label': label || null },
    h('code', null, capped(text)));
}

function lineCount(s) {
  const t = str(s);
  return t ? t.split('\n').length : 0;
}

/** A short description shown next to the tool name. */
function summaryFor(name, args) {
  if (name === 'file_editor') {
    const action = str(args.command || args.action);
    const path = str(args.path);
    return h('span', { class: 'call-summary' },
      action ? h('span', { class: 'action' }, action) : null,
      path ? h('code', { class: 'path' }, path) : null);
  }
  return h('span', { class: 'call-summary' });
}

function argsView(name, args) {
  const box = h('div', { class: 'call-args' });
  if ('_raw' in args) {
    box.appendChild(h('p', { class: 'muted small' }, 'The arguments were not valid JSON:'));
    box.appendChild(codeBlock(args._raw, '', 'Raw arguments'));
    return box;
  }
  if (name === 'bash') {
    const cmd = str(args.command);
    if (cmd.trim()) box.appendChild(codeBlock(cmd, 'command', 'Command'));
    else box.appendChild(h('p', { class: 'muted small' }, 'No command — waiting for the previous command to finish.'));
    const extra = Object.keys(args).filter((k) => k !== 'command');
    if (extra.length) box.appendChild(h('p', { class: 'muted small' }, extra.map((k) => `${k}: ${str(args[k])}`).join(' · ')));
    return box;
  }
  if (name === 'file_editor') {
    const extras = [];
    if (args.insert_line !== undefined) extras.push(`after line ${str(args.insert_line)}`);
    if (Array.isArray(args.view_range)) extras.push(`lines ${args.view_range.join('–')}`);
    if (extras.length) box.appendChild(h('p', { class: 'muted small' }, extras.join(' · ')));
    const blocks = [
      ['file_text', 'File text'],
      ['old_str', 'Text to replace'],
      ['new_str', 'Replacement text'],
    ];
    for (const [key, label] of blocks) {
      if (typeof args[key] !== 'string') continue;
      const n = lineCount(args[key]);
      box.appendChild(h('details', { class: 'arg-block' },
        h('summary', null, `${label} (${n} ${n === 1 ? 'line' : 'lines'})`),
        codeBlock(args[key], '', label)));
    }
    return box;
  }
  if (name === 'finish') {
    const answer = str(args.answer);
    if (answer.trim()) box.appendChild(textBlock(answer, 'finish-answer'));
    else box.appendChild(h('p', { class: 'muted small' }, 'Finished without an answer argument.'));
    return box;
  }
  const keys = Object.keys(args);
  if (keys.length) {
    box.appendChild(h('details', { class: 'arg-block' },
      h('summary', null, 'Arguments'),
      codeBlock(JSON.stringify(args, null, 2), '', 'Arguments')));
  }
  return box;
}

function setResult(call, ev) {
  call.done = true;
  // a tool of an MCP server (docs/MCP.md): the server's name beside the tool's
  if (ev.mcp_server && !call.el.querySelector('.mcp-server')) {
    const name = call.el.querySelector('.tool-name');
    if (name) name.after(h('span', { class: 'mcp-server muted small' }, `MCP server ${String(ev.mcp_server)}`));
  }
  const status = String(ev.status || 'done');
  call.chip.className = `chip chip-${toolChipKind(status)}`;
  call.chip.textContent = status;
  call.time.textContent = ev.duration_ms !== undefined ? duration(ev.duration_ms) : '';
  clear(call.output);
  const stdout = str(ev.stdout);
  const stderr = str(ev.stderr);
  const text = str(ev.text);
  let shown = false;
  if (stdout) {
    call.output.appendChild(stream('stdout', stdout, 'out-stdout'));
    shown = true;
  }
  if (stderr) {
    call.output.appendChild(stream('stderr', stderr, 'out-stderr'));
    shown = true;
  }
  if (text && (!shown || (call.name !== 'bash' && text !== stdout))) {
    call.output.appendChild(stream(call.name === 'bash' ? 'note' : 'result', text, 'out-text'));
    shown = true;
  }
  if (!shown && call.name !== 'finish') {
    call.output.appendChild(h('p', { class: 'muted small' }, 'No output.'));
  }
}

function stream(label, text, cls) {
  return h('div', { class: `stream ${cls}` },
    h('div', { class: 'stream-label' }, label),
    codeBlock(text, '', label));
}
