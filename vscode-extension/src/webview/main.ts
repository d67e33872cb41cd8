/**
 * The run overview webview's script (bundled for the browser). Renders what the
 * extension posts, and posts back clicks: open a file at a line, refresh, pick a
 * run. It never reads the store: all data comes from the language server
 * through the extension.
 */
import type { RunOverview } from '../protocol';
import { overviewBodyHtml } from '../overview/page';
import { escapeHtml } from '../overview/html';

interface VsCodeApi {
  postMessage(message: unknown): void;
}
declare function acquireVsCodeApi(): VsCodeApi;

type Incoming = { type: 'overview'; overview: RunOverview } | { type: 'error'; message: string } | { type: 'loading' };

const vscode = acquireVsCodeApi();
const root = document.getElementById('root') as HTMLElement;

window.addEventListener('message', (event: MessageEvent<Incoming>) => {
  const message = event.data;
  if (message.type === 'overview') {
    root.innerHTML = overviewBodyHtml(message.overview);
    document.body.dataset.runId = String(message.overview.run.id);
  } else if (message.type === 'error') {
    root.innerHTML = `<p class="error">${escapeHtml(message.message)}</p><p><button data-action="refresh">Retry</button></p>`;
  } else if (message.type === 'loading') {
    root.classList.add('loading');
  }
});

document.addEventListener('click', (event) => {
  const target = event.target as Element | null;
  const opener = target?.closest('[data-uri]');
  if (opener) {
    event.preventDefault();
    vscode.postMessage({ type: 'open', uri: opener.getAttribute('data-uri'), line: Number(opener.getAttribute('data-line') ?? 0) });
    return;
  }
  const action = target?.closest('[data-action]');
  if (action) {
    event.preventDefault();
    vscode.postMessage({ type: action.getAttribute('data-action') });
  }
});

/** Hovering a node lights up its edges and the nodes at their other ends. */
function setHover(node: Element | null): void {
  for (const el of Array.from(document.querySelectorAll('.fusion .hl'))) {
    el.classList.remove('hl');
  }
  if (!node) return;
  const id = node.getAttribute('data-id');
  const side = node.classList.contains('source') ? 'source' : 'kernel';
  const other = side === 'source' ? 'kernel' : 'source';
  node.classList.add('hl');
  for (const edge of Array.from(document.querySelectorAll(`.fusion .fedge`))) {
    if (edge.getAttribute(`data-${side}`) === id) {
      edge.classList.add('hl');
      const end = document.querySelector(`.fusion .fnode.${other}[data-id="${CSS.escape(edge.getAttribute(`data-${other}`) ?? '')}"]`);
      end?.classList.add('hl');
    }
  }
}

document.addEventListener('mouseover', (event) => {
  const node = (event.target as Element | null)?.closest('.fusion .fnode') ?? null;
  setHover(node);
});

vscode.postMessage({ type: 'ready' });
