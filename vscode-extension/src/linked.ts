/**
 * Turn a `kernelscope/linkedRanges` answer into the decorations of every visible
 * editor: the requesting editor gets its origin lines, every other visible
 * editor whose file the answer names gets its linked lines, and every other
 * visible editor is cleared. Pure: the extension applies the plan with
 * `setDecorations`.
 */
import type { LinkedRangesAnswer, LinkRole, Range } from './protocol';
import { uriKey } from './uris';

export interface LinkedLine {
  range: Range;
  role: LinkRole;
  label: string;
}

export interface EditorHighlights {
  origin: Range[];
  linked: LinkedLine[];
}

/**
 * The highlights per visible editor, keyed by the editor's URI as given.
 * `answer` null (no answer, or the server is not running) clears everything.
 */
export function planHighlights(
  answer: LinkedRangesAnswer | null,
  requestingUri: string,
  visibleUris: string[],
): Map<string, EditorHighlights> {
  const byKey = new Map<string, LinkedLine[]>();
  for (const link of answer?.links ?? []) {
    const key = uriKey(link.uri);
    const lines = byKey.get(key) ?? [];
    for (const range of link.ranges) {
      for (const line of linesOf(range)) {
        lines.push({ range: wholeLine(line), role: link.role, label: link.label });
      }
    }
    byKey.set(key, lines);
  }
  const requestingKey = uriKey(requestingUri);
  const plan = new Map<string, EditorHighlights>();
  for (const uri of visibleUris) {
    const key = uriKey(uri);
    const isRequesting = key === requestingKey;
    const origin = isRequesting && answer?.origin ? linesOf(answer.origin).map(wholeLine) : [];
    // The requesting editor shows only its origin: links into the same file
    // (e.g. another line of a kernel) would drown the cursor's own lines.
    const linked = isRequesting ? [] : mergeLines(byKey.get(key) ?? []);
    plan.set(uri, { origin, linked });
  }
  return plan;
}

/**
 * The 0-based lines a range covers. A range that ends at character 0 of a later
 * line (LSP's whole-line form, `{start: L:0, end: L+1:0}`) does not cover that line.
 */
export function linesOf(range: Range): number[] {
  const first = range.start.line;
  let last = range.end.line;
  if (last > first && range.end.character === 0) {
    last -= 1;
  }
  const lines: number[] = [];
  for (let line = first; line <= Math.max(first, last); line++) {
    lines.push(line);
  }
  return lines;
}

function wholeLine(line: number): Range {
  return { start: { line, character: 0 }, end: { line, character: 0 } };
}

/** One entry per line, labels of the links that reach it joined, sorted by line. */
export function mergeLines(lines: LinkedLine[]): LinkedLine[] {
  const merged = new Map<number, LinkedLine>();
  for (const line of lines) {
    const key = line.range.start.line;
    const existing = merged.get(key);
    if (!existing) {
      merged.set(key, { ...line });
    } else if (line.label && !existing.label.split('\n').includes(line.label)) {
      existing.label = existing.label ? `${existing.label}\n${line.label}` : line.label;
    }
  }
  return [...merged.values()].sort((a, b) => a.range.start.line - b.range.start.line);
}

/** The first linked line of a file in the plan, to scroll it into view. */
export function firstLinkedLine(highlights: EditorHighlights | undefined): number | undefined {
  return highlights?.linked[0]?.range.start.line;
}
