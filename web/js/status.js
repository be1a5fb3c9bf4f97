// Names and colours for task states and tool-call results.

const TASK_LABELS = {
  queued: 'Queued',
  running: 'Running',
  succeeded: 'Succeeded',
  failed: 'Failed',
  cancelled: 'Stopped',
};

export function statusLabel(status) {
  return TASK_LABELS[status] || (status ? String(status) : 'Unknown');
}

export function isFinal(status) {
  return status === 'succeeded' || status === 'failed' || status === 'cancelled';
}

/** Chip colour for a tool-call status string ("ok", "exit 2", "still running after 10 s",
 * "killed at the 120 s timeout", …). */
export function toolChipKind(status) {
  const s = String(status || '').toLowerCase();
  if (s === 'ok') return 'ok';
  if (s.startsWith('still running')) return 'live';
  if (/^exit\b/.test(s) || s === 'interrupted' || s === 'busy') return 'warn';
  if (s.startsWith('killed') || s.includes('error') || s.includes('timeout') || s.includes('memory')) return 'bad';
  return 'neutral';
}
