// The artifact gallery: previews of the files the model left in
// /testbed/output, each with its name, size, type and a download link.
// Previews never run with the llmbox origin's rights: html goes in an iframe
// sandboxed without allow-same-origin, and text is inserted as text.

import { h, clear } from './dom.js';
import { bytes, count } from './format.js';
import { artifactUrl } from './api.js';

const TEXT_PREVIEW_BYTES = 64 * 1024;

const IMAGE_EXT = ['png', 'jpg', 'jpeg', 'gif', 'webp', 'svg', 'avif', 'bmp', 'ico'];
const VIDEO_EXT = ['mp4', 'webm', 'm4v', 'ogv', 'mov'];
const AUDIO_EXT = ['wav', 'mp3', 'ogg', 'oga', 'flac', 'm4a', 'aac', 'opus'];
const HTML_EXT = ['html', 'htm'];
const TEXT_EXT = ['txt', 'csv', 'tsv', 'json', 'jsonl', 'md', 'markdown', 'log', 'py', 'js', 'mjs',
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
  if (TEXT_EXT.includes(ext) || mime.startsWith('text/') || mime === 'application/json'
      || mime === 'application/x-ndjson' || mime === 'inode/x-empty') return 'text';
  return 'file';
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
  const order = { image: 0, video: 1, audio: 2, html: 3, text: 4, file: 5 };
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
  const download = artifactUrl(taskId, name, false);
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
        h('iframe', { src: inline, sandbox: 'allow-scripts', title: `Preview of ${name}`, loading: 'lazy', referrerpolicy: 'no-referrer' }));
      break;
    case 'text':
      preview = h('div', { class: 'preview preview-text' }, h('p', { class: 'muted small' }, 'Loading…'));
      loadText(preview, inline, a.size);
      break;
    default:
      preview = h('div', { class: 'preview preview-file', 'aria-hidden': 'true' },
        h('span', { class: 'file-ext' }, extOf(name).slice(0, 6).toUpperCase() || 'FILE'));
  }

  const expand = kind === 'text'
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
        kind === 'file' || kind === 'audio' || kind === 'video'
          ? name
          : h('a', { href: inline, target: '_blank', rel: 'noopener', title: `Open ${name} in a new tab` }, name)),
      h('div', { class: 'artifact-meta' },
        h('span', null, bytes(a.size)),
        a.mime ? h('span', { class: 'artifact-mime' }, String(a.mime)) : null),
      h('div', { class: 'artifact-actions' },
        h('a', { class: 'button button-secondary button-small', href: download, download: base, 'aria-label': `Download ${name}` }, 'Download'),
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

async function loadText(box, url, size) {
  let text = '';
  let truncated = false;
  try {
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
          truncated = true;
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
  } catch {
    clear(box);
    box.appendChild(h('p', { class: 'muted small' }, 'The preview could not be loaded. The file can still be downloaded.'));
    return;
  }
  clear(box);
  if (!text) {
    box.appendChild(h('p', { class: 'muted small' }, 'This file is empty.'));
    return;
  }
  box.appendChild(h('pre', { class: 'code', tabindex: '0', 'aria-label': 'File preview' }, h('code', null, text)));
  if (truncated || (Number(size) > TEXT_PREVIEW_BYTES)) {
    box.appendChild(h('p', { class: 'muted small preview-note' },
      `Showing the first ${bytes(TEXT_PREVIEW_BYTES)}${size ? ` of ${bytes(size)}` : ''}. Download the file to see all of it.`));
  }
}

export function summarize(artifacts) {
  const n = Array.isArray(artifacts) ? artifacts.length : 0;
  const total = n ? artifacts.reduce((s, a) => s + (Number(a.size) || 0), 0) : 0;
  return n ? `${count(n)} ${n === 1 ? 'file' : 'files'}, ${bytes(total)}` : 'no files';
}
