import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import * as path from 'node:path';
import { test } from 'node:test';
import { ServerCommands } from '../src/protocol';

// out/test/manifest.test.js -> the extension's package.json
const manifest = JSON.parse(readFileSync(path.join(__dirname, '..', '..', 'package.json'), 'utf8'));

test("the extension's commands never take a server command's id (the client registers those itself)", () => {
  // vscode-languageclient registers every command of the server's executeCommandProvider;
  // an extension command of the same id makes the client fail to start.
  const ours: string[] = manifest.contributes.commands.map((c: { command: string }) => c.command);
  const server = Object.values(ServerCommands) as string[];
  assert.ok(server.includes('kernelscope.buildAsm') && ours.includes('kernelscope.buildAsmForLine'));
  assert.deepEqual(ours.filter((id) => server.includes(id)), []);
});

test('every setting the client sends is declared in the manifest', () => {
  const declared = Object.keys(manifest.contributes.configuration.properties);
  for (const key of ['python', 'target', 'deviceTarget', 'train', 'inlayHints', 'asmAfterCompile', 'decisions']) {
    assert.ok(declared.includes(`kernelscope.${key}`), key);
  }
});
