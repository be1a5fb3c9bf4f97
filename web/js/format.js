// Formatting helpers: sizes, durations, times, counts.

const nf = new Intl.NumberFormat();

export function count(n) {
  return nf.format(Number(n) || 0);
}

export function bytes(n) {
  n = Number(n) || 0;
  if (n < 1024) return `${n} B`;
  const units = ['KB', 'MB', 'GB', 'TB'];
  let v = n;
  let i = -1;
  do { v /= 1024; i++; } while (v >= 1024 && i < units.length - 1);
  return `${v >= 100 ? Math.round(v) : v.toFixed(1).replace(/\.0$/, '')} ${units[i]}`;
}

/** A task's model as people read it: "@replay" is a replay, not a model. */
export function modelLabel(model) {
  return model === '@replay' ? 'replay (no model)' : String(model);
}

export function duration(ms) {
  ms = Number(ms);
  if (!Number.isFinite(ms) || ms < 0) return '';
  if (ms < 1) return 'under 1 ms'; // a sandbox from the warm pool
  if (ms < 1000) return `${Math.round(ms)} ms`;
  const s = ms / 1000;
  if (s < 60) return `${s < 10 ? s.toFixed(1) : Math.round(s)} s`;
  const m = Math.floor(s / 60);
  const rs = Math.round(s - m * 60);
  if (m < 60) return rs ? `${m} min ${rs} s` : `${m} min`;
  const hr = Math.floor(m / 60);
  const rm = m - hr * 60;
  return rm ? `${hr} h ${rm} min` : `${hr} h`;
}

const rtf = typeof Intl.RelativeTimeFormat === 'function'
  ? new Intl.RelativeTimeFormat(undefined, { numeric: 'auto' })
  : null;

/** "3 minutes ago", falling back to a date for anything older than a week. */
export function ago(ms, now = Date.now()) {
  ms = Number(ms);
  if (!Number.isFinite(ms) || ms <= 0) return '';
  const diff = (ms - now) / 1000;
  const abs = Math.abs(diff);
  if (!rtf || abs >= 7 * 86400) return dateTime(ms);
  if (abs < 45) return 'just now';
  if (abs < 3600) return rtf.format(Math.round(diff / 60), 'minute');
  if (abs < 86400) return rtf.format(Math.round(diff / 3600), 'hour');
  return rtf.format(Math.round(diff / 86400), 'day');
}

export function dateTime(ms) {
  ms = Number(ms);
  if (!Number.isFinite(ms) || ms <= 0) return '';
  return new Date(ms).toLocaleString(undefined, {
    dateStyle: 'medium', timeStyle: 'short',
  });
}

export function plural(n, one, many) {
  return `${count(n)} ${Number(n) === 1 ? one : many}`;
}

/** Make sure a message reads as a sentence: capitalised, ending in a stop. */
export function sentence(text) {
  let s = String(text ?? '').trim();
  if (!s) return '';
  s = s[0].toUpperCase() + s.slice(1);
  if (!/[.!?…)"”]$/.test(s)) s += '.';
  return s;
}

/** A running clock: "0:07", "12:34", "1:02:03". */
export function clock(ms) {
  ms = Number(ms);
  if (!Number.isFinite(ms) || ms < 0) return '';
  const total = Math.floor(ms / 1000);
  const hr = Math.floor(total / 3600);
  const m = Math.floor((total % 3600) / 60);
  const s = total % 60;
  const pad = (n) => String(n).padStart(2, '0');
  return hr ? `${hr}:${pad(m)}:${pad(s)}` : `${m}:${pad(s)}`;
}
