/** What the status-bar item says, from the server's `kernelscope/status` and the client's own state. */
import type { RankInfo, StatusParams } from './protocol';

/** `rank 1 of 2 (gloo)`: a run's place in its distributed job. */
export function rankText(rank: RankInfo): string {
  return `rank ${rank.rank} of ${rank.worldSize}${rank.backend ? ` (${rank.backend})` : ''}`;
}

export type ClientState = 'starting' | 'running' | 'stopped' | 'not-installed' | 'no-interpreter';

export interface StatusPresentation {
  text: string;
  tooltip: string;
  isError: boolean;
}

/** The tooltip's first lines in an untrusted workspace (Restricted Mode). */
export const RESTRICTED_TOOLTIP =
  'Restricted Mode: this workspace is not trusted, so kernelscope compiles nothing in it (a compile runs its code) ' +
  "and started its language server with your user-level Python, not the interpreter the workspace's settings name. " +
  'Recorded runs can still be browsed. To compile, trust the workspace ("Workspaces: Manage Workspace Trust").';

/**
 * The status-bar item. `restricted`: the server runs for an untrusted workspace; the
 * item then says so (a shield, "restricted") and its tooltip says why nothing compiles.
 */
export function statusPresentation(client: ClientState, status: StatusParams | undefined, restricted = false): StatusPresentation {
  const presentation = basePresentation(client, status);
  if (!restricted || client !== 'running') {
    return presentation;
  }
  return {
    text: `${presentation.text.replace(/^\$\([^)]*\) /, '$(shield) ')} · restricted`,
    tooltip: `${RESTRICTED_TOOLTIP}\n\n${presentation.tooltip}`,
    isError: presentation.isError,
  };
}

function basePresentation(client: ClientState, status: StatusParams | undefined): StatusPresentation {
  switch (client) {
    case 'starting':
      return { text: '$(loading~spin) kernelscope', tooltip: 'Starting the kernelscope language server…', isError: false };
    case 'stopped':
      return { text: '$(circle-slash) kernelscope', tooltip: 'The kernelscope language server is not running. Click to pick a run; run "kernelscope: Restart server" to start it.', isError: true };
    case 'not-installed':
      return { text: '$(error) kernelscope: not installed', tooltip: 'kernelscope is not installed in the selected interpreter (see the notification or the output channel).', isError: true };
    case 'no-interpreter':
      return { text: '$(error) kernelscope: no Python', tooltip: 'The Python interpreter was not found: set "kernelscope.python".', isError: true };
    case 'running':
      break;
  }
  const target = status?.target ? ` ${status.target}` : '';
  const run = status?.runId != null ? `run ${status.runId}${status.rank ? ` · rank ${status.rank}` : ''}` : 'no run';
  const detail = status?.message ? `\n${status.message}` : '';
  switch (status?.state) {
    case 'compiling':
      return { text: '$(sync~spin) kernelscope: compiling', tooltip: `Compiling${target}…${detail}`, isError: false };
    case 'failed':
      return { text: '$(error) kernelscope: failed', tooltip: `The last compile${target} failed.${detail}\nThe last good run stays selected (${run}). Click to pick a run.`, isError: true };
    case 'watching':
      return { text: `$(eye) kernelscope: ${run}`, tooltip: `Watching${target}: recompiles on save.${detail}\nClick to pick a run.`, isError: false };
    case 'idle':
    default:
      return { text: `$(circuit-board) kernelscope: ${run}`, tooltip: `${status?.runId != null ? `Showing run ${status.runId}${target}.` : 'No run recorded yet: run "kernelscope: Compile".'}${detail}\nClick to pick a run.`, isError: false };
  }
}
