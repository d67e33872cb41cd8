/** Escaping for the overview's HTML and SVG strings. */

export function escapeHtml(text: unknown): string {
  return String(text ?? '')
    .replace(/&/g, '&amp;')
    .replace(/</g, '&lt;')
    .replace(/>/g, '&gt;')
    .replace(/"/g, '&quot;')
    .replace(/'/g, '&#39;');
}

/** Shorten to `max` characters with an ellipsis at the end (source code reads from its start). */
export function shortenEnd(text: string, max: number): string {
  return text.length <= max ? text : `${text.slice(0, max - 1)}…`;
}

/** Shorten to `max` characters with an ellipsis in the middle (kernel names differ at their end). */
export function shorten(text: string, max: number): string {
  if (text.length <= max) {
    return text;
  }
  const head = Math.ceil((max - 1) * 0.6);
  const tail = max - 1 - head;
  return `${text.slice(0, head)}…${text.slice(text.length - tail)}`;
}

/** "fw", "bw" or "inf" from a graph label such as "0/0 forward" or "0_0_0-backward". */
export function passOf(graph: string): string {
  if (/backward/.test(graph)) return 'bw';
  if (/forward/.test(graph)) return 'fw';
  if (/inference/.test(graph)) return 'inf';
  return '';
}
