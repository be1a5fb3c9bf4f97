// The llmbox HTTP API, as the page uses it. Every failure becomes an ApiError
// whose message is a sentence a person can read.

import { sentence, bytes } from './format.js';

// What the server accepts per task until /api/info says otherwise.
export let UPLOAD_LIMIT = 100 * 1024 * 1024;
export function setUploadLimit(n) {
  if (Number.isFinite(n) && n > 0) UPLOAD_LIMIT = n;
}

// The CSRF token of this browser's login session (GET /api/session or the
// login answer). Every request that changes something sends it; without a
// login (no users on the server, or a bearer token) it stays empty.
let csrfToken = '';
export function setCsrfToken(token) {
  csrfToken = typeof token === 'string' ? token : '';
}
function csrfHeaders(method) {
  return csrfToken && method !== 'GET' && method !== 'HEAD' ? { 'X-CSRF-Token': csrfToken } : {};
}

// A 401 means the login is missing or has ended: the app shows the login
// form (it listens for this event) instead of one error per request.
function loginNeeded(status) {
  if (status === 401) window.dispatchEvent(new CustomEvent('llmbox:login-needed'));
}

// Where a task's previews live: GET /api/tasks/{id} names a preview_base
// whose key lets a sandboxed html page load its own images and scripts
// (the browser sends no login cookie from a sandboxed frame).
const previewBases = new Map();
export function rememberTask(task) {
  if (task && typeof task.id === 'string' && typeof task.preview_base === 'string'
      && task.preview_base.startsWith(`/api/tasks/${task.id}/preview/`)) {
    previewBases.set(task.id, task.preview_base);
  }
}

export class ApiError extends Error {
  constructor(message, status = 0, code = '', body = null) {
    super(message);
    this.name = 'ApiError';
    this.status = status;
    this.code = code;
    this.body = body; // the answer's JSON, when it had one (a dataset's file, line, field)
  }
}

/** A task id as it may appear in a URL: the server's ids are hex. */
export function validTaskId(id) {
  return typeof id === 'string' && /^[A-Za-z0-9_-]{1,128}$/.test(id);
}

const STATUS_SENTENCES = {
  400: 'The server did not accept the request.',
  401: 'You need to log in again.',
  403: 'The server does not allow that.',
  404: 'The server could not find what was asked for.',
  409: 'That is not possible in the task\'s current state.',
  413: () => `The upload is larger than the server accepts (${bytes(UPLOAD_LIMIT)} per task).`,
  415: 'The server does not accept this kind of upload.',
  429: 'Too many tasks are running or starting right now. Please try again in a moment.',
  500: 'The server ran into an internal error.',
  502: 'The llmbox service behind the web server is not answering.',
  503: 'The service is not available right now. Please try again in a moment.',
  504: 'The llmbox service took too long to answer.',
};

function messageFor(status, body) {
  const err = body && typeof body === 'object' ? body.error : null;
  if (err && typeof err.message === 'string' && err.message.trim()) {
    return { message: sentence(err.message), code: String(err.code ?? '') };
  }
  if (status === 0) {
    return {
      message: 'Could not reach the llmbox server. Check the connection and try again.',
      code: 'network',
    };
  }
  const known = STATUS_SENTENCES[status];
  return {
    message: (typeof known === 'function' ? known() : known)
      ?? `The server answered with an unexpected error (HTTP ${status}).`,
    code: '',
  };
}

function parseJSON(text) {
  if (!text) return null;
  try { return JSON.parse(text); } catch { return null; }
}

export async function request(method, path, { body, headers, signal } = {}) {
  let res;
  try {
    res = await fetch(path, {
      method,
      body,
      signal,
      headers: { Accept: 'application/json', ...csrfHeaders(method), ...headers },
      credentials: 'same-origin',
      cache: 'no-store',
    });
  } catch (e) {
    if (e && e.name === 'AbortError') throw e;
    const { message, code } = messageFor(0, null);
    throw new ApiError(message, 0, code);
  }
  const text = await res.text().catch(() => '');
  const data = parseJSON(text);
  if (!res.ok) {
    loginNeeded(res.status);
    const { message, code } = messageFor(res.status, data);
    throw new ApiError(message, res.status, code, data);
  }
  if (data === null && text.trim()) {
    throw new ApiError('The server sent an answer this page could not read.', res.status, 'bad_json');
  }
  return data ?? {};
}

export const getJSON = (path, opts) => request('GET', path, opts);
export const postJSON = (path, opts) => request('POST', path, opts);
export const deleteJSON = (path, opts) => request('DELETE', path, opts);

export function taskPath(id) {
  return `/api/tasks/${encodeURIComponent(id)}`;
}

export function artifactUrl(taskId, path, inline = false) {
  const segs = String(path).split('/').filter(Boolean).map(encodeURIComponent).join('/');
  return `${taskPath(taskId)}/artifacts/${segs}${inline ? '?inline=1' : ''}`;
}

/** An html artifact shown as a page: its links to other artifacts work. */
export function previewUrl(taskId, path) {
  const base = previewBases.get(taskId);
  if (!base) return artifactUrl(taskId, path, true);
  return base + String(path).split('/').filter(Boolean).map(encodeURIComponent).join('/');
}

/** ?path=<folder> for a folder bundle, '' for the whole output. */
function folderQuery(folder) {
  return folder ? `?path=${encodeURIComponent(folder)}` : '';
}

export const api = {
  health: () => getJSON('/api/health'),
  /** {login_required, user, via, csrf_token?, limits?} */
  session: () => getJSON('/api/session'),
  login: (token) => postJSON('/api/login', {
    body: JSON.stringify({ token }),
    headers: { 'Content-Type': 'application/json' },
  }),
  logout: () => postJSON('/api/logout'),
  info: () => getJSON('/api/info'),
  models: () => getJSON('/api/models'),
  /** One page of the history; pass the previous page's next_before(_id) for the next. */
  tasks: ({ limit = 50, before = null, beforeId = null } = {}) => {
    const q = new URLSearchParams({ limit: String(limit) });
    if (before) q.set('before', String(before));
    if (before && beforeId) q.set('before_id', String(beforeId));
    return getJSON(`/api/tasks?${q}`);
  },
  task: (id) => getJSON(taskPath(id)),
  artifacts: (id) => getJSON(`${taskPath(id)}/artifacts`),
  cancel: (id) => postJSON(`${taskPath(id)}/cancel`),
  rerun: (id, replay = false) => postJSON(`${taskPath(id)}/rerun${replay ? '?replay=1' : ''}`),
  remove: (id) => deleteJSON(taskPath(id)),
  fork: (id, round = 0) => postJSON(`${taskPath(id)}/fork${round ? `?round=${round}` : ''}`),
  share: (id) => postJSON(`${taskPath(id)}/shares`),
  /** POST /api/tasks/{id}/messages: form is a FormData (prompt, files, fresh). */
  message: (id, form) => postJSON(`${taskPath(id)}/messages`, { body: form }),
  /** The event stream, resuming after event `after` (0: from the start). */
  eventsUrl: (id, after = 0) => `${taskPath(id)}/events${after > 0 ? `?last_event_id=${after}` : ''}`,
  bundleZip: (id, folder = '') => `${taskPath(id)}/bundle.zip${folderQuery(folder)}`,
  bundleTgz: (id, folder = '') => `${taskPath(id)}/bundle.tar.gz${folderQuery(folder)}`,
  trajectory: (id) => `${taskPath(id)}/trajectory`,
  evals: () => getJSON('/api/evals'),
  evalGet: (id, offset = 0, limit = 1000) => getJSON(`${evalPath(id)}?offset=${offset}&limit=${limit}`),
  evalCancel: (id) => postJSON(`${evalPath(id)}/cancel`),
  evalRemove: (id) => deleteJSON(evalPath(id)),
  evalResults: (id) => `${evalPath(id)}/results.jsonl`,
  evalSummaryMd: (id) => `${evalPath(id)}/summary.md`,
  /** POST /api/evals: form is a FormData with the dataset and the options. */
  evalCreate: (form) => postJSON('/api/evals', { body: form }),
};

export function evalPath(id) {
  return `/api/evals/${encodeURIComponent(id)}`;
}

/**
 * POST /api/tasks as multipart/form-data with upload progress.
 *   fields: {prompt, max_turns, model?, network?, image?, unpack?}
 *   files:  [{file: File, name: 'relative/path.ext'}]
 *   onProgress(loaded, total)
 * Resolves with the server's JSON (which names the new task's id).
 * Returns {promise, abort}.
 */
export function createTask(fields, files, onProgress) {
  const form = new FormData();
  for (const [key, value] of Object.entries(fields)) {
    if (value !== undefined && value !== null && value !== '') form.append(key, String(value));
  }
  for (const { file, name } of files) form.append('files', file, name);

  const xhr = new XMLHttpRequest();
  const promise = new Promise((resolve, reject) => {
    xhr.open('POST', '/api/tasks');
    xhr.setRequestHeader('Accept', 'application/json');
    for (const [k, v] of Object.entries(csrfHeaders('POST'))) xhr.setRequestHeader(k, v);
    xhr.responseType = 'text';
    xhr.upload.addEventListener('progress', (e) => {
      if (onProgress) onProgress(e.loaded, e.lengthComputable ? e.total : 0);
    });
    xhr.addEventListener('load', () => {
      const data = parseJSON(xhr.responseText);
      if (xhr.status >= 200 && xhr.status < 300) {
        const id = data && (data.id ?? (data.task && data.task.id));
        if (validTaskId(id)) resolve({ ...data, id });
        else reject(new ApiError('The server accepted the task but did not say which task it is.', xhr.status, 'bad_json'));
        return;
      }
      loginNeeded(xhr.status);
      const { message, code } = messageFor(xhr.status, data);
      reject(new ApiError(message, xhr.status, code));
    });
    xhr.addEventListener('error', () => {
      const { message, code } = messageFor(0, null);
      reject(new ApiError(message, 0, code));
    });
    xhr.addEventListener('abort', () => {
      reject(new ApiError('The upload was cancelled.', 0, 'aborted'));
    });
    xhr.addEventListener('timeout', () => {
      reject(new ApiError('The upload took too long and was stopped.', 0, 'timeout'));
    });
    xhr.send(form);
  });
  return { promise, abort: () => xhr.abort() };
}
