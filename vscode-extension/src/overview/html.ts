/** Escaping for the overview's HTML and SVG strings. */

export function escapeHtml(text: unknown): string {
  return String(text ?? '')
    .replace(/&/g, '&amp;')
    .replace(/</g, '&lt;')
    .replace(/>/g, '&gt;')
    .replace(/"/g, '&quot;')
    .replace(/'/g, '&#39;');
}

/** "fw", "bw" or "inf" from a graph label such as "0/0 forward" or "0_0_0-backward". */
export function passOf(graph: string): string {
  if (/backward/.test(graph)) return 'bw';
  if (/forward/.test(graph)) return 'fw';
  if (/inference/.test(graph)) return 'inf';
  return '';
}
