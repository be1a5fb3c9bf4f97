// The "New task" form: prompt, example tasks, files (picker, folder picker,
// drag and drop), model, max turns, sandbox options (image, network, unpack
// archives), upload with progress. The limits come from /api/info.

import { h, clear, $, show } from './dom.js';
import { bytes, count, plural, sentence } from './format.js';
import { api, createTask, UPLOAD_LIMIT, setUploadLimit, ApiError } from './api.js';
import { renderExamples } from './examples.js';

const ARCHIVE_RE = /\.(zip|tar\.gz|tgz|tar)$/i;

export class TaskForm {
  /** onCreated(id) is called once the server has accepted a task. */
  constructor({ onCreated }) {
    this.onCreated = onCreated;
    this.files = new Map(); // name -> File
    this.upload = null;

    this.form = $('#task-form');
    this.prompt = $('#prompt');
    this.maxTurns = $('#max-turns');
    this.fileInput = $('#file-input');
    this.folderInput = $('#folder-input');
    this.dropzone = $('#dropzone');
    this.fileList = $('#file-list');
    this.summary = $('#files-summary');
    this.error = $('#form-error');
    this.runButton = $('#run-button');
    this.cancelButton = $('#cancel-upload');
    this.progress = $('#upload-progress');
    this.progressBar = $('#upload-bar');
    this.progressText = $('#upload-text');
    this.modelSelect = $('#model');
    this.fieldset = $('#task-fields');
    this.unpack = $('#unpack');
    this.network = $('#network');
    this.image = $('#image');
    this.limits = { upload_files: 1000, max_turns_limit: 1000 };
    this.turnsTouched = false;

    $('#upload-limit').textContent = bytes(UPLOAD_LIMIT);
    this.maxTurns.addEventListener('input', () => { this.turnsTouched = true; });
    this.unpack.addEventListener('change', () => this.renderFiles());
    renderExamples($('#examples'), (prompt) => {
      this.prompt.value = prompt;
      if (this.error.dataset.field === 'prompt') this.setError('');
      this.prompt.focus();
    });

    $('#choose-files').addEventListener('click', () => this.fileInput.click());
    $('#choose-folder').addEventListener('click', () => this.folderInput.click());
    if (!('webkitdirectory' in this.folderInput)) show($('#choose-folder'), false);

    this.fileInput.addEventListener('change', () => {
      this.addFiles([...this.fileInput.files].map((f) => ({ file: f, name: f.name })));
      this.fileInput.value = '';
    });
    this.folderInput.addEventListener('change', () => {
      this.addFiles([...this.folderInput.files].map((f) => ({ file: f, name: f.webkitRelativePath || f.name })));
      this.folderInput.value = '';
    });

    this.setupDrop();

    this.form.addEventListener('submit', (e) => {
      e.preventDefault();
      this.submit();
    });
    this.form.addEventListener('keydown', (e) => {
      if (e.key === 'Enter' && (e.ctrlKey || e.metaKey)) {
        e.preventDefault();
        this.submit();
      }
    });
    this.cancelButton.addEventListener('click', () => {
      if (this.upload) this.upload.abort();
    });
    this.prompt.addEventListener('input', () => {
      if (this.error.dataset.field === 'prompt') this.setError('');
    });

    this.renderFiles();
  }

  focus() {
    this.prompt.focus();
  }

  /** Limits and options from GET /api/info; the form works with defaults without it. */
  async loadInfo() {
    let info;
    try {
      info = await api.info();
    } catch {
      return;
    }
    const lim = info && info.limits ? info.limits : {};
    if (Number(lim.upload_bytes) > 0) {
      setUploadLimit(Number(lim.upload_bytes));
      $('#upload-limit').textContent = bytes(UPLOAD_LIMIT);
    }
    if (Number(lim.upload_files) > 0) {
      this.limits.upload_files = Number(lim.upload_files);
      $('#upload-files').textContent = plural(this.limits.upload_files, 'file', 'files');
    }
    if (Number(lim.max_turns_limit) > 0) {
      this.limits.max_turns_limit = Number(lim.max_turns_limit);
      this.maxTurns.max = String(this.limits.max_turns_limit);
      $('#max-turns-hint').textContent = `Model replies before it must stop (1–${count(this.limits.max_turns_limit)}).`;
    }
    if (Number(lim.max_turns_default) > 0 && !this.turnsTouched) this.maxTurns.value = String(lim.max_turns_default);
    // Internet access is offered only when the operator allows it.
    const modes = info.network && Array.isArray(info.network.modes) ? info.network.modes : [];
    show($('#network-field'), modes.includes('nat'));
    // The image picker only when there is a choice.
    const images = Array.isArray(info.images) ? info.images.filter((i) => i && typeof i.name === 'string') : [];
    clear(this.image);
    for (const img of images) {
      this.image.appendChild(h('option', { value: img.name, selected: Boolean(img.default) }, img.name));
    }
    show($('#image-field'), images.length > 1);
    // MCP servers a task may choose: offered only when some are configured.
    const mcp = Array.isArray(info.mcp) ? info.mcp.filter((n) => typeof n === 'string') : [];
    const list = $('#mcp-list');
    clear(list);
    for (const name of mcp) {
      list.appendChild(h('label', { class: 'check' },
        h('input', { type: 'checkbox', name: 'mcp', value: name }), h('span', {}, name)));
    }
    show($('#mcp-field'), mcp.length > 0);
    this.renderFiles();
  }

  async loadModels() {
    let models = [];
    try {
      const data = await api.models();
      models = Array.isArray(data) ? data : (Array.isArray(data.models) ? data.models : []);
    } catch {
      models = []; // the server picks its default model
    }
    models = models.filter((m) => m && typeof m.name === 'string' && m.name);
    clear(this.modelSelect);
    if (models.length > 1) {
      for (const m of models) {
        this.modelSelect.appendChild(h('option', { value: m.name, selected: Boolean(m.default), dataset: { about: modelAbout(m) } }, m.name));
      }
      const hint = $('#model-hint');
      const update = () => {
        const opt = this.modelSelect.selectedOptions[0];
        hint.textContent = opt && opt.dataset.about ? opt.dataset.about : '';
      };
      this.modelSelect.addEventListener('change', update);
      update();
      show($('#model-field'), true);
      show($('#model-fixed'), false);
    } else if (models.length === 1) {
      $('#model-name').textContent = models[0].name;
      $('#model-fixed-hint').textContent = modelAbout(models[0]);
      show($('#model-field'), false);
      show($('#model-fixed'), true);
    } else {
      show($('#model-field'), false);
      show($('#model-fixed'), false);
    }
  }

  // ---- files ----------------------------------------------------------------

  setupDrop() {
    const zone = this.dropzone;
    let depth = 0;
    const hasFiles = (e) => e.dataTransfer && [...e.dataTransfer.types].includes('Files');
    zone.addEventListener('dragenter', (e) => {
      if (!hasFiles(e) || this.upload) return;
      e.preventDefault();
      depth++;
      zone.classList.add('is-dragover');
    });
    zone.addEventListener('dragover', (e) => {
      if (!hasFiles(e)) return;
      e.preventDefault();
      e.dataTransfer.dropEffect = 'copy';
    });
    zone.addEventListener('dragleave', () => {
      depth = Math.max(0, depth - 1);
      if (depth === 0) zone.classList.remove('is-dragover');
    });
    zone.addEventListener('drop', async (e) => {
      e.preventDefault();
      depth = 0;
      if (this.upload) return;
      zone.classList.remove('is-dragover');
      try {
        const files = await filesFromDataTransfer(e.dataTransfer);
        this.addFiles(files);
      } catch {
        this.setError('Some of the dropped files could not be read. Try choosing them with the button instead.');
      }
    });
    // A drop that misses the zone must not navigate away from the page.
    window.addEventListener('dragover', (e) => { if (hasFiles(e)) e.preventDefault(); });
    window.addEventListener('drop', (e) => { if (hasFiles(e)) e.preventDefault(); });
  }

  addFiles(list) {
    if (this.upload) return; // the form is locked while it uploads
    let skipped = 0;
    for (const { file, name } of list) {
      const clean = cleanName(name);
      if (!clean) { skipped++; continue; }
      if (!this.files.has(clean) && this.files.size >= this.limits.upload_files) { skipped++; continue; }
      this.files.set(clean, file);
    }
    if (skipped) {
      this.setError(`${plural(skipped, 'file was', 'files were')} left out because ${skipped === 1 ? 'its name is' : 'their names are'} not usable or there are too many files.`);
    } else if (this.error.dataset.field === 'files') {
      this.setError('');
    }
    this.renderFiles();
  }

  removeFile(name, index) {
    this.files.delete(name);
    this.renderFiles();
    // Keep keyboard focus in the list, or fall back to the picker button.
    const buttons = this.fileList.querySelectorAll('button');
    const next = buttons[Math.min(index, buttons.length - 1)];
    (next || $('#choose-files')).focus();
  }

  totalSize() {
    let total = 0;
    for (const f of this.files.values()) total += f.size;
    return total;
  }

  renderFiles() {
    clear(this.fileList);
    const names = [...this.files.keys()].sort((a, b) => a.localeCompare(b));
    const unpack = this.unpack.checked;
    names.forEach((name, i) => {
      const file = this.files.get(name);
      this.fileList.appendChild(h('li', { class: 'file-item' },
        h('span', { class: 'file-name', title: name }, name),
        unpack && ARCHIVE_RE.test(name) ? h('span', { class: 'chip chip-neutral file-tag', title: 'This archive will be unpacked into the input folder' }, 'will be unpacked') : null,
        h('span', { class: 'file-size' }, bytes(file.size)),
        h('button', {
          type: 'button',
          class: 'button button-quiet button-small file-remove',
          'aria-label': `Remove ${name}`,
          onclick: () => this.removeFile(name, i),
        }, 'Remove'),
      ));
    });
    const total = this.totalSize();
    const over = total > UPLOAD_LIMIT;
    show(this.summary, names.length > 0);
    this.summary.classList.toggle('is-over', over);
    this.summary.textContent = names.length
      ? `${plural(names.length, 'file', 'files')}, ${bytes(total)} of ${bytes(UPLOAD_LIMIT)}${over ? ' — too large; remove some files to run.' : '.'}`
      : '';
    if (names.length > 1) {
      this.summary.appendChild(document.createTextNode(' '));
      this.summary.appendChild(h('button', {
        type: 'button', class: 'link-button', onclick: () => {
          this.files.clear();
          this.renderFiles();
          $('#choose-files').focus();
        },
      }, 'Remove all'));
    }
  }

  // ---- submit ---------------------------------------------------------------

  setError(message, field = '') {
    this.error.textContent = message ? sentence(message) : '';
    this.error.dataset.field = field;
    show(this.error, Boolean(message));
  }

  setBusy(busy) {
    // Everything but "Cancel upload" is locked while the files go up, so
    // what is sent is what the form shows.
    this.fieldset.disabled = busy;
    this.dropzone.classList.toggle('is-disabled', busy);
    this.runButton.disabled = busy;
    this.runButton.textContent = busy ? 'Uploading…' : 'Run';
    show(this.cancelButton, busy);
    show(this.progress, busy);
    this.form.setAttribute('aria-busy', busy ? 'true' : 'false');
    if (busy) this.cancelButton.focus();
  }

  validate() {
    const prompt = this.prompt.value.trim();
    if (!prompt) {
      this.setError('Please describe the task first.', 'prompt');
      this.prompt.focus();
      return null;
    }
    const turnsText = this.maxTurns.value.trim();
    const turns = Number(turnsText);
    const maxTurns = this.limits.max_turns_limit;
    if (!turnsText || !Number.isInteger(turns) || turns < 1 || turns > maxTurns) {
      this.setError(`Max turns must be a whole number from 1 to ${count(maxTurns)}.`, 'max_turns');
      this.maxTurns.focus();
      return null;
    }
    const total = this.totalSize();
    if (total > UPLOAD_LIMIT) {
      this.setError(`The chosen files add up to ${bytes(total)}, more than the ${bytes(UPLOAD_LIMIT)} limit. Remove some files and try again.`, 'files');
      $('#choose-files').focus();
      return null;
    }
    if (this.files.size > this.limits.upload_files) {
      this.setError(`A task takes at most ${plural(this.limits.upload_files, 'file', 'files')}; remove some and try again.`, 'files');
      $('#choose-files').focus();
      return null;
    }
    const fields = { prompt: this.prompt.value, max_turns: turns, unpack: this.unpack.checked ? '1' : '0' };
    if (!$('#model-field').hidden && this.modelSelect.value) fields.model = this.modelSelect.value;
    if (!$('#network-field').hidden) fields.network = this.network.checked ? 'nat' : 'none';
    if (!$('#image-field').hidden && this.image.value) fields.image = this.image.value;
    const mcp = Array.from(document.querySelectorAll('#mcp-list input:checked')).map((c) => c.value);
    if (!$('#mcp-field').hidden && mcp.length) fields.mcp = mcp.join(',');
    return fields;
  }

  async submit() {
    if (this.upload) return;
    const fields = this.validate();
    if (!fields) return;
    this.setError('');

    const files = [...this.files.entries()].map(([name, file]) => ({ name, file }));
    const total = this.totalSize();
    this.progressBar.value = 0;
    this.progressText.textContent = files.length ? `Uploading ${bytes(total)}…` : 'Sending the task…';
    this.setBusy(true);

    this.upload = createTask(fields, files, (loaded, size) => {
      if (!size) return;
      const pct = Math.min(100, Math.round((loaded / size) * 100));
      this.progressBar.value = pct;
      this.progressText.textContent = pct >= 100
        ? 'Upload complete. Waiting for the server…'
        : `Uploading ${bytes(loaded)} of ${bytes(size)} (${pct}%)`;
    });

    try {
      const task = await this.upload.promise;
      this.upload = null;
      this.setBusy(false);
      this.prompt.value = '';
      this.files.clear();
      this.renderFiles();
      this.onCreated(task.id);
    } catch (e) {
      this.upload = null;
      this.setBusy(false);
      const message = e instanceof ApiError ? e.message : 'The task could not be sent.';
      this.setError(e.code === 'aborted' ? 'The upload was cancelled. Nothing was sent.' : message);
      this.runButton.focus();
    }
  }
}

/** "openai · Qwen/Qwen3-Coder · text tools": what a configured name stands for. */
function modelAbout(m) {
  const parts = [m.provider, m.model && m.model !== m.name ? m.model : ''].filter(Boolean);
  if (m.tool_mode === 'text') parts.push('text tool calls');
  return parts.join(' · ');
}
const MAX_WALK = 100000; // entries read from one drop, whatever the server's limit

/** Normalise a relative path: forward slashes, no empty/. /.. segments. */
function cleanName(name) {
  const segs = String(name).replace(/\\/g, '/').split('/')
    .filter((s) => s && s !== '.' && s !== '..');
  return segs.join('/');
}

/** Files from a drop, walking into dropped folders (relative paths kept). */
async function filesFromDataTransfer(dt) {
  const items = dt.items ? [...dt.items] : [];
  const entries = items
    .filter((it) => it.kind === 'file')
    .map((it) => (typeof it.webkitGetAsEntry === 'function' ? it.webkitGetAsEntry() : null));
  if (!entries.length || entries.some((en) => !en)) {
    return [...dt.files].map((f) => ({ file: f, name: f.name }));
  }
  const out = [];
  await Promise.all(entries.map((en) => walkEntry(en, out)));
  return out;
}

async function walkEntry(entry, out) {
  if (out.length >= MAX_WALK) return;
  if (entry.isFile) {
    const file = await new Promise((resolve, reject) => entry.file(resolve, reject));
    out.push({ file, name: entry.fullPath.replace(/^\/+/, '') || file.name });
    return;
  }
  if (entry.isDirectory) {
    const reader = entry.createReader();
    for (;;) {
      const batch = await new Promise((resolve, reject) => reader.readEntries(resolve, reject));
      if (!batch.length) break;
      for (const child of batch) await walkEntry(child, out);
    }
  }
}
