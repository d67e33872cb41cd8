import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import * as path from 'node:path';
import { test } from 'node:test';
import { ServerCommands } from '../src/protocol';
import { RESTRICTED_SETTINGS } from '../src/settings';

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

test('workspace trust: limited support, every setting that names something to run or compile restricted', () => {
  const trust = manifest.capabilities?.untrustedWorkspaces;
  assert.equal(trust?.supported, 'limited');
  assert.match(trust.description, /compiles nothing/);
  assert.deepEqual(trust.restrictedConfigurations, RESTRICTED_SETTINGS.map((key) => `kernelscope.${key}`));
  assert.ok(trust.restrictedConfigurations.includes('kernelscope.python'));
  // A new setting must be put on one side: restricted (it names code, an interpreter or a
  // file a compile reads) or harmless (a flag or a choice among fixed values).
  const harmless = ['kernelscope.deviceTarget', 'kernelscope.train', 'kernelscope.inlayHints', 'kernelscope.asmAfterCompile', 'kernelscope.trace.server'];
  const declared = Object.keys(manifest.contributes.configuration.properties).sort();
  assert.deepEqual(declared, [...trust.restrictedConfigurations, ...harmless].sort());
  for (const key of harmless) {
    const type = manifest.contributes.configuration.properties[key].type;
    assert.ok(type === 'boolean' || manifest.contributes.configuration.properties[key].enum, `${key} is a flag or an enum`);
  }
});
