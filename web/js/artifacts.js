// The artifact gallery: previews of the files the model left in
// /testbed/output, each with its name, size, type and a download link.
// Previews never run with the llmbox origin's rights: html goes in an iframe
// sandboxed without allow-same-origin, and text is inserted as text.

import { h, clear } from './dom.js';
import { bytes, count, plural } from './format.js';
import { api, artifactUrl, previewUrl } from './api.js';

const TEXT_PREVIEW_BYTES = 64 * 1024;
const CSV_MAX_ROWS = 500;
const CSV_MAX_COLS = 60;

const IMAGE_EXT = ['png', 'jpg', 'jpeg', 'gif', 'webp', 'svg', 'avif', 'bmp', 'ico'];
const VIDEO_EXT = ['mp4', 'webm', 'm4v', 'ogv', 'mov'];
const AUDIO_EXT = ['wav', 'mp3', 'ogg', 'oga', 'flac', 'm4a', 'aac', 'opus'];
const HTML_EXT = ['html', 'htm'];
const CSV_EXT = ['csv', 'tsv'];
const TEXT_EXT = ['txt', 'json', 'jsonl', 'md', 'markdown', 'log', 'py', 'js', 'mjs',
  'ts', 'c', 'h', 'cpp', 'hpp', 'rs', 'go', 'java', 'rb', 'sh', 'bash', 'r', 'sql', 'yaml', 'yml',
  'toml', 'ini', 'cfg', 'conf', 'xml', 'tex', 'bib', 'css', 'srt', 'vtt', 'ipynb', 'diff', 'patch'];

export function extOf(path) {
  const base = String(path).split('/').pop() || '';
  const dot = base.lastIndexOf('.');
  return dot > 0 ? base.slice(dot + 1).toLowerCase() : '';
}

export function kindOf(artifact) {
  const ext = extOf(artifact.path);
  const mime = String(artifact.mime || '').toLowerCase().split(';')[0].trim();
  if (IMAGE_EXT.includes(ext) || mime.startsWith('image/')) return 'image';
  if (VIDEO_EXT.includes(ext) || mime.startsWith('video/')) return 'video';
  if (AUDIO_EXT.includes(ext) || mime.startsWith('audio/')) return 'audio';
  if (HTML_EXT.includes(ext) || mime === 'text/html' || mime === 'application/xhtml+xml') return 'html';
  if (ext === 'pdf' || mime === 'application/pdf') return 'pdf';
  if (CSV_EXT.includes(ext) || mime === 'text/csv' || mime === 'text/tab-separated-values') return 'csv';
  if (TEXT_EXT.includes(ext) || mime.startsWith('text/') || mime === 'application/json'
      || mime === 'application/x-ndjson' || mime === 'inode/x-empty') return 'text';
  return 'file';
}

/** Where to download an artifact from: the signed link nginx serves on its
 * own (download_url, from the list) while it has a minute left, else the
 * API route, which checks the login on each request. */
function downloadHref(taskId, a) {
  const good = typeof a.download_url === 'string' && a.download_url.startsWith('/dl/')
    && Number(a.download_expires) * 1000 > Date.now() + 60_000;
  return good ? a.download_url : artifactUrl(taskId, a.path, false);
}

/** A download link that stays good however long the page is open: its
 * target is chosen again at the click (a signed link expires). */
function downloadLink(taskId, a, attrs, ...children) {
  const el = h('a', { ...attrs, href: downloadHref(taskId, a) }, ...children);
  el.addEventListener('click', () => { el.href = downloadHref(taskId, a); });
  return el;
}

/**
 * Render the gallery into `container`.
 * Returns nothing; text previews load in the background.
 */
export function renderGallery(container, taskId, artifacts) {
  clear(container);
  const list = (Array.isArray(artifacts) ? artifacts : [])
    .filter((a) => a && typeof a.path === 'string' && a.path);
  if (!list.length) {
    container.appendChild(h('p', { class: 'muted' }, 'The model left no files in /testbed/output.'));
    return;
  }
  // Media first, then pages, text and other files; by path within a kind.
  const order = { image: 0, video: 1, audio: 2, html: 3, csv: 4, text: 5, pdf: 6, file: 7 };
  list.sort((a, b) => (order[kindOf(a)] - order[kindOf(b)]) || a.path.localeCompare(b.path));
  const grid = h('ul', { class: 'gallery' });
  for (const a of list) grid.appendChild(card(taskId, a));
  container.appendChild(grid);
}

function card(taskId, a) {
  const kind = kindOf(a);
  const name = a.path;
  const base = name.split('/').pop();
  const inline = artifactUrl(taskId, name, true);
  // an html page opens under the task's preview key, so its relative links
  // (images, scripts next to it) load in the sandbox too
  const page = kind === 'html' ? previewUrl(taskId, name) : inline;
  let preview;
  switch (kind) {
    case 'image':
      preview = h('a', { class: 'preview preview-image', href: inline, target: '_blank', rel: 'noopener', 'aria-label': `Open ${name} full size` },
        h('img', { src: inline, alt: name, loading: 'lazy', decoding: 'async' }));
      break;
    case 'video':
      preview = h('div', { class: 'preview preview-media' },
        h('video', { src: inline, controls: true, preload: 'metadata', 'aria-label': name }));
      break;
    case 'audio':
      preview = h('div', { class: 'preview preview-audio' },
        audioIcon(),
        h('audio', { src: inline, controls: true, preload: 'metadata', 'aria-label': name }));
      break;
    case 'html':
      preview = h('div', { class: 'preview preview-html' },
        h('iframe', { src: page, sandbox: 'allow-scripts', title: `Preview of ${name}`, loading: 'lazy', referrerpolicy: 'no-referrer' }));
      break;
    case 'text':
      preview = h('div', { class: 'preview preview-text' }, h('p', { class: 'muted small' }, 'Loading…'));
      loadText(preview, inline, a.size);
      break;
    case 'csv':
      preview = h('div', { class: 'preview preview-text preview-csv' }, h('p', { class: 'muted small' }, 'Loading…'));
      loadCsv(preview, inline, a.size, name);
      break;
    case 'pdf':
      // Browsers will not run their PDF viewer in the sandbox the file is
      // served with, so a PDF is offered as a download.
      preview = h('div', { class: 'preview preview-file', 'aria-hidden': 'true' },
        h('span', { class: 'file-ext file-ext-pdf' }, 'PDF'));
      break;
    default:
      preview = h('div', { class: 'preview preview-file', 'aria-hidden': 'true' },
        h('span', { class: 'file-ext' }, extOf(name).slice(0, 6).toUpperCase() || 'FILE'));
  }

  const expand = kind === 'text' || kind === 'csv'
    ? h('button', {
      type: 'button',
      class: 'button button-quiet button-small',
      'aria-expanded': 'false',
      'aria-label': `Show more of ${name}`,
    }, 'Show more')
    : null;
  const li = h('li', { class: `artifact artifact-${kind}` },
    preview,
    h('div', { class: 'artifact-info' },
      h('div', { class: 'artifact-name', title: name },
        kind === 'file' || kind === 'audio' || kind === 'video' || kind === 'pdf'
          ? name
          : h('a', { href: page, target: '_blank', rel: 'noopener', title: `Open ${name} in a new tab` }, name)),
      h('div', { class: 'artifact-meta' },
        h('span', null, bytes(a.size)),
        a.mime ? h('span', { class: 'artifact-mime' }, String(a.mime)) : null),
      h('div', { class: 'artifact-actions' },
        downloadLink(taskId, a, { class: `button ${kind === 'pdf' ? 'button-primary' : 'button-secondary'} button-small`, download: base, 'aria-label': `Download ${name}` }, kind === 'pdf' ? 'Download PDF' : 'Download'),
        expand)));
  if (expand) {
    expand.addEventListener('click', () => {
      const open = li.classList.toggle('is-expanded');
      expand.setAttribute('aria-expanded', String(open));
      expand.setAttribute('aria-label', `${open ? 'Show less' : 'Show more'} of ${name}`);
      expand.textContent = open ? 'Show less' : 'Show more';
      if (open) li.scrollIntoView({ block: 'nearest' });
    });
  }
  return li;
}

function audioIcon() {
  const ns = 'http://www.w3.org/2000/svg';
  const svg = document.createElementNS(ns, 'svg');
  svg.setAttribute('viewBox', '0 0 48 24');
  svg.setAttribute('class', 'audio-icon');
  svg.setAttribute('aria-hidden', 'true');
  const heights = [6, 12, 18, 10, 22, 14, 8, 16, 20, 9, 13, 5];
  heights.forEach((ht, i) => {
    const r = document.createElementNS(ns, 'rect');
    r.setAttribute('x', String(1 + i * 4));
    r.setAttribute('y', String(12 - ht / 2));
    r.setAttribute('width', '2.2');
    r.setAttribute('height', String(ht));
    r.setAttribute('rx', '1.1');
    svg.appendChild(r);
  });
  return svg;
}

/** The first TEXT_PREVIEW_BYTES of url as text: {text, truncated}. */
async function fetchHead(url) {
  let text = '';
  let truncated = false;
  const res = await fetch(url, { credentials: 'same-origin' });
  if (!res.ok) throw new Error(`HTTP ${res.status}`);
  if (res.body && res.body.getReader) {
    const reader = res.body.getReader();
    const chunks = [];
    let got = 0;
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      const room = TEXT_PREVIEW_BYTES - got;
      if (value.length >= room) {
        chunks.push(value.subarray(0, room));
        got += room;
        truncated = true; // the cap was reached: more may follow (the size says)
        reader.cancel().catch(() => {});
        break;
      }
      chunks.push(value);
      got += value.length;
    }
    const buf = new Uint8Array(got);
    let off = 0;
    for (const c of chunks) { buf.set(c, off); off += c.length; }
    text = new TextDecoder('utf-8', { fatal: false }).decode(buf, { stream: truncated });
  } else {
    const all = await res.text();
    truncated = all.length > TEXT_PREVIEW_BYTES;
    text = all.slice(0, TEXT_PREVIEW_BYTES);
  }
  return { text, truncated };
}

function previewFailed(box) {
  clear(box);
  box.appendChild(h('p', { class: 'muted small' }, 'The preview could not be loaded. The file can still be downloaded.'));
}

function previewNote(box, shown, size) {
  if (shown || Number(size) > TEXT_PREVIEW_BYTES) {
    box.appendChild(h('p', { class: 'muted small preview-note' },
      `Showing the first ${bytes(TEXT_PREVIEW_BYTES)}${size ? ` of ${bytes(size)}` : ''}. Download the file to see all of it.`));
  }
}

async function loadText(box, url, size) {
  let got;
  try {
    got = await fetchHead(url);
  } catch {
    previewFailed(box);
    return;
  }
  clear(box);
  if (!got.text) {
    box.appendChild(h('p', { class: 'muted small' }, 'This file is empty.'));
    return;
  }
  box.appendChild(h('pre', { class: 'code', tabindex: '0', 'aria-label': 'File preview' }, h('code', null, got.text)));
  previewNote(box, got.truncated && Number(size) > TEXT_PREVIEW_BYTES, size);
}

/**
 * Parses CSV (RFC 4180: quoted fields, "" for a quote, line breaks inside
 * quotes) with the given delimiter; at most maxRows rows of maxCols cells.
 * When the text was cut short, its last (partial) row is dropped.
 */
export function parseCsv(text, delim = ',', maxRows = CSV_MAX_ROWS, maxCols = CSV_MAX_COLS, cut = false) {
  const rows = [];
  let row = [];
  let cell = '';
  let quoted = false;
  let i = 0;
  const n = text.length;
  const endCell = () => { if (row.length < maxCols) row.push(cell); cell = ''; };
  const endRow = () => { endCell(); rows.push(row); row = []; };
  while (i < n && rows.length < maxRows) {
    const c = text[i];
    if (quoted) {
      if (c === '"') {
        if (text[i + 1] === '"') { cell += '"'; i += 2; continue; }
        quoted = false;
      } else {
        cell += c;
      }
      i++;
      continue;
    }
    if (c === '"' && cell === '') { quoted = true; i++; continue; }
    if (c === delim) { endCell(); i++; continue; }
    if (c === '\r' && text[i + 1] === '\n') { endRow(); i += 2; continue; }
    if (c === '\n' || c === '\r') { endRow(); i++; continue; }
    cell += c;
    i++;
  }
  const more = i < n;
  if (!more && !cut && (cell !== '' || row.length)) endRow();
  return { rows, more: more || cut };
}

function sniffDelimiter(text, name) {
  if (/\.tsv$/i.test(name)) return '\t';
  const line = text.split(/\r?\n/, 1)[0] || '';
  const counts = [',', ';', '\t'].map((d) => [d, line.split(d).length - 1]);
  counts.sort((x, y) => y[1] - x[1]);
  return counts[0][1] > 0 ? counts[0][0] : ',';
}

const NUMERIC = /^\s*[-+]?(\d+([.,]\d*)?|[.,]\d+)([eE][-+]?\d+)?\s*%?\s*$/;

async function loadCsv(box, url, size, name) {
  let got;
  try {
    got = await fetchHead(url);
  } catch {
    previewFailed(box);
    return;
  }
  clear(box);
  if (!got.text.trim()) {
    box.appendChild(h('p', { class: 'muted small' }, 'This file is empty.'));
    return;
  }
  const cut = got.truncated && !(Number(size) > 0 && Number(size) <= TEXT_PREVIEW_BYTES);
  const { rows, more } = parseCsv(got.text, sniffDelimiter(got.text, name), CSV_MAX_ROWS, CSV_MAX_COLS, cut);
  if (!rows.length) {
    box.appendChild(h('pre', { class: 'code', tabindex: '0', 'aria-label': `Preview of ${name}` }, h('code', null, got.text)));
    return;
  }
  const width = Math.max(...rows.map((r) => r.length));
  const [head, ...body] = rows;
  // a column of numbers is right-aligned, header included
  const numeric = Array.from({ length: width }, (_, k) => {
    const cells = body.map((r) => r[k] ?? '').filter((v) => v.trim() !== '');
    return cells.length > 0 && cells.filter((v) => NUMERIC.test(v)).length * 2 >= cells.length;
  });
  const table = h('table', { class: 'csv-table' },
    h('thead', null, h('tr', null, ...Array.from({ length: width }, (_, k) => h('th', { scope: 'col', class: numeric[k] ? 'num' : null }, head[k] ?? '')))),
    h('tbody', null, ...body.map((r) => h('tr', null,
      ...Array.from({ length: width }, (_, k) => h('td', { class: numeric[k] ? 'num' : null }, r[k] ?? ''))))));
  box.appendChild(h('div', { class: 'csv-scroll', tabindex: '0', role: 'region', 'aria-label': `Table preview of ${name}` }, table));
  const shown = body.length;
  box.appendChild(h('p', { class: 'muted small preview-note' },
    `${plural(shown, 'row', 'rows')} of data${more ? ' shown; download the file to see all of it' : ''}.`));
}

/**
 * The output as a tree of folders, each with a "Download folder" link (a
 * folder bundle). Rendered only when the output has folders; returns true
 * when it was.
 */
export function renderTree(container, taskId, artifacts) {
  clear(container);
  const list = (Array.isArray(artifacts) ? artifacts : []).filter((a) => a && typeof a.path === 'string' && a.path);
  if (!list.some((a) => a.path.includes('/'))) return false;
  const root = { dirs: new Map(), files: [], count: 0, size: 0 };
  for (const a of list) {
    const parts = a.path.split('/');
    let node = root;
    node.count++;
    node.size += Number(a.size) || 0;
    for (const part of parts.slice(0, -1)) {
      if (!node.dirs.has(part)) node.dirs.set(part, { dirs: new Map(), files: [], count: 0, size: 0 });
      node = node.dirs.get(part);
      node.count++;
      node.size += Number(a.size) || 0;
    }
    node.files.push(a);
  }
  container.appendChild(h('ul', { class: 'tree' }, ...treeItems(taskId, root, '', 0)));
  return true;
}

function treeItems(taskId, node, prefix, depth) {
  const items = [];
  const dirs = [...node.dirs.keys()].sort((a, b) => a.localeCompare(b));
  for (const name of dirs) {
    const child = node.dirs.get(name);
    const path = prefix ? `${prefix}/${name}` : name;
    items.push(h('li', { class: 'tree-folder' },
      h('details', { open: depth < 2 },
        h('summary', null,
          folderIcon(),
          h('span', { class: 'tree-name' }, `${name}/`),
          h('span', { class: 'tree-meta' }, `${plural(child.count, 'file', 'files')}, ${bytes(child.size)}`)),
        h('div', { class: 'tree-actions' },
          h('a', { class: 'button button-quiet button-small', href: api.bundleZip(taskId, path), download: `${name}.zip`, 'aria-label': `Download the folder ${path} (.zip)` }, 'Download folder (.zip)'),
          h('a', { class: 'button button-quiet button-small', href: api.bundleTgz(taskId, path), download: `${name}.tar.gz`, 'aria-label': `Download the folder ${path} (.tar.gz)` }, '.tar.gz')),
        h('ul', null, ...treeItems(taskId, child, path, depth + 1)))));
  }
  const files = [...node.files].sort((a, b) => a.path.localeCompare(b.path));
  for (const a of files) {
    const base = a.path.split('/').pop();
    items.push(h('li', { class: 'tree-file' },
      downloadLink(taskId, a, { download: base, title: `Download ${a.path}` }, base),
      h('span', { class: 'tree-meta' }, bytes(a.size))));
  }
  return items;
}

function folderIcon() {
  const ns = 'http://www.w3.org/2000/svg';
  const svg = document.createElementNS(ns, 'svg');
  svg.setAttribute('viewBox', '0 0 24 24');
  svg.setAttribute('class', 'tree-icon');
  svg.setAttribute('aria-hidden', 'true');
  const p = document.createElementNS(ns, 'path');
  p.setAttribute('d', 'M3 6.5A1.5 1.5 0 014.5 5h4l2 2h9A1.5 1.5 0 0121 8.5v9a1.5 1.5 0 01-1.5 1.5h-15A1.5 1.5 0 013 17.5z');
  p.setAttribute('fill', 'none');
  p.setAttribute('stroke', 'currentColor');
  p.setAttribute('stroke-width', '1.8');
  p.setAttribute('stroke-linejoin', 'round');
  svg.appendChild(p);
  return svg;
}

export function summarize(artifacts) {
  const n = Array.isArray(artifacts) ? artifacts.length : 0;
  const total = n ? artifacts.reduce((s, a) => s + (Number(a.size) || 0), 0) : 0;
  return n ? `${count(n)} ${n === 1 ? 'file' : 'files'}, ${bytes(total)}` : 'no files';
}
