/**
 * Every file ibfleet parses — inventory, playbook, ssh config, known_hosts, and the inventory that
 * onboard edits — refuses hostile input the same way: exit 2, the problem on one line with
 * file:line:col, no stack trace, nothing contacted. A library error that escaped would end as
 * "unexpected error" (exit 1); that path prints one line and says where the details are.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { afterAll, describe, expect, it } from 'vitest';
import { main } from '../../src/cli.js';
import type { Io } from '../../src/commands/context.js';
import { ConfigError } from '../../src/errors.js';
import { loadInventory } from '../../src/inventory/load.js';
import { PACKAGE_ROOT } from '../../src/package-root.js';
import { loadPlaybook } from '../../src/playbook/playbook.js';
import { checkHostKey, parseKnownHosts, patternsMatch } from '../../src/runner/known-hosts.js';
import { parseSshConfig } from '../../src/runner/ssh-target.js';
import { ibfleet } from '../helpers/cli.js';
import { SEEDS_INVENTORY } from '../lab/fleet.js';

const scratch = mkdtempSync(join(tmpdir(), 'ibfleet-parse-errors-'));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));
const file = (name: string, content: string) => {
  const path = join(scratch, name);
  writeFileSync(path, content);
  return path;
};

/** Nine to the fourth power strings from five short lines, if the aliases were expanded. */
const ALIAS_BOMB = `a: &a ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]
b: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a]
c: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b]
d: &d [*c, *c, *c, *c, *c, *c, *c, *c, *c]
e: [*d, *d, *d, *d, *d, *d, *d, *d, *d]
`;

/** stderr of a refused run: the problem lines (file:line:col) and the closing line, never a stack. */
function expectRefused(result: { code: number; stdout: string; stderr: string }, where: RegExp): void {
  expect(result.code, result.stderr).toBe(2);
  const lines = result.stderr.trimEnd().split('\n');
  expect(lines[0]).toMatch(where);
  expect(result.stderr).not.toMatch(/^\s+at /m);
  expect(result.stderr).not.toMatch(/unexpected error|ReferenceError|TypeError/);
  expect(lines.length).toBeLessThanOrEqual(2);
}

describe('YAML that the library throws on, not just reports', () => {
  it.each([
    [
      'an alias bomb',
      ALIAS_BOMB,
      /:3:8: alias \*b expands into too many nodes: aliases of aliases multiply \(a "billion laughs"\), and ibfleet expands at most 100/,
    ],
    ['an alias with no anchor', 'fabric: *nowhere\n', /:1:9: alias \*nowhere names no anchor before it/],
    [
      'a __proto__ key',
      `${SEEDS_INVENTORY}  __proto__: { name: x }\n`.replace('pairs:\n  - { owner: alice, cpu: 16, mem: 34 }\n', ''),
      /:\d+:3: key __proto__ is not allowed/,
    ],
    [
      'a __proto__ key spelt with an escape',
      `${SEEDS_INVENTORY}  "\\x5f_proto__": { name: x }\n`.replace(
        'pairs:\n  - { owner: alice, cpu: 16, mem: 34 }\n',
        '',
      ),
      /:\d+:3: key __proto__ is not allowed/,
    ],
  ])('%s in the inventory: exit 2, one line with file:line:col', async (_what, text, message) => {
    const inventory = file('inventory.yaml', text);
    expectRefused(await ibfleet(['-i', inventory, 'hosts']), new RegExp(`^${inventory}${message.source}`));
    expect(() => loadInventory(text, 'x.yaml')).toThrow(ConfigError);
  });

  it('an alias bomb in a playbook: exit 2 at the alias', async () => {
    const playbook = file('playbook.yaml', `name: bomb\n${ALIAS_BOMB}steps: [policy-routing]\n`);
    expectRefused(
      await ibfleet(['render', '--hosts', '16', '--playbook', playbook]),
      new RegExp(`^${playbook}:4:8: alias \\*b expands into too many nodes`),
    );
    expect(() => loadPlaybook(`name: x\nsteps: [*nope]\n`, 'p.yaml')).toThrow(
      /p\.yaml:2:9: alias \*nope names no anchor before it/,
    );
  });

  it('a map used as a key is refused as a key, without a warning from the library on stderr', async () => {
    const inventory = file(
      'map-key.yaml',
      SEEDS_INVENTORY.replace('hosts:\n', 'hosts:\n  ? [1, 2]\n  : { name: x }\n'),
    );
    const result = await ibfleet(['-i', inventory, 'hosts']);
    expect(result.code).toBe(2);
    expect(result.stderr).not.toMatch(/Warning|stringified/);
  });

  it('onboard refuses an alias bomb in the inventory it would edit, before contacting anyone', async () => {
    const inventory = file('onboard.yaml', ALIAS_BOMB);
    const result = await ibfleet([
      '-i',
      inventory,
      'onboard',
      '--cpu',
      '16',
      '--mem',
      '34',
      '--owner',
      'x',
      '--cpu-address',
      '192.0.2.16',
      '--mem-address',
      '192.0.2.34',
    ]);
    expectRefused(result, new RegExp(`^${inventory}:3:8: alias \\*b expands`));
  });
});

describe('ssh config', () => {
  it.each([
    ['an unclosed quote', 'Host lab\n  HostName "unterminated\n', 2, 3],
    ['a Match without its value', 'Host a\n  User x\nMatch host\n  User y\n', 3, 1],
    ['a Host of nothing but quotes', 'Host ""\n', 1, 1],
  ])('%s: exit 2 at its line, before any host is contacted', async (_what, config, line, column) => {
    const configFile = file('ssh_config', config);
    // The hosts are in TEST-NET-1: were anything contacted, it would fail as unreachable (exit 1).
    const inventory = file(
      'ssh.yaml',
      `${SEEDS_INVENTORY.replace(/10\.208\.130\./g, '192.0.2.')}ssh: { config: ${configFile} }\n`,
    );
    expectRefused(
      await ibfleet(['-i', inventory, '--timeout', '5', 'status']),
      new RegExp(`^${configFile}:${line}:${column}: cannot parse this ssh config line`),
    );
    expect(() => parseSshConfig(config, 'cfg')).toThrow(ConfigError);
  });
});

describe('--json names the file that was invalid', () => {
  it.each([
    ['inventory', () => ['-i', file('bad-inventory.yaml', ALIAS_BOMB), 'hosts']],
    [
      'playbook',
      () => [
        'render',
        '--hosts',
        '16',
        '--playbook',
        file('bad-playbook.yaml', `name: bomb\n${ALIAS_BOMB}steps: [policy-routing]\n`),
      ],
    ],
    // Malformed YAML: refused by the YAML reader inventories and playbooks share.
    [
      'playbook',
      () => ['render', '--hosts', '16', '--playbook', file('bad-yaml-playbook.yaml', 'name: [x\nsteps: {\n')],
    ],
    // Valid YAML, refused by the playbook's own checks.
    [
      'playbook',
      () => [
        'render',
        '--hosts',
        '16',
        '--playbook',
        file('bad-step-playbook.yaml', 'name: p\nsteps:\n  - policy-routing:\n      mainRoutes: delete\n'),
      ],
    ],
    [
      'ssh-config',
      () => [
        '-i',
        file(
          'ssh-json.yaml',
          `${SEEDS_INVENTORY.replace(/10\.208\.130\./g, '192.0.2.')}ssh: { config: ${file('ssh_config_json', 'Host ""\n')} }\n`,
        ),
        '--timeout',
        '5',
        'status',
      ],
    ],
  ])('error.kind is %s, with the problems at their positions (exit 2)', async (kind, argv) => {
    const result = await ibfleet(['--json', ...argv()]);
    expect(result.code).toBe(2);
    const doc = JSON.parse(result.stdout) as {
      ok: boolean;
      error: { kind: string; problems: { file: string; line: number }[] };
    };
    expect(doc).toMatchObject({ ok: false, error: { kind } });
    expect(doc.error.problems.length).toBeGreaterThan(0);
  });
});

describe('known_hosts', () => {
  it('hostile lines are skipped or never match; nothing throws, and a pattern of many stars stays linear', () => {
    const key = Buffer.from('AAAAC3NzaC1lZDI1NTE5AAAAIG', 'base64');
    const text = [
      '|1|not base64 at all|@@@ ssh-ed25519 AAAA',
      '|1|||| ssh-ed25519 AAAA',
      '@revoked',
      '@cert-authority * ssh-rsa',
      `${'*'.repeat(5000)}x ssh-ed25519 ${key.toString('base64')}`,
      `[(.+)+]:22,${'a?'.repeat(2000)} ssh-ed25519 ${key.toString('base64')}`,
      '\u0000\u0001 \uffff \ud800',
      'x'.repeat(100_000),
    ].join('\n');
    const entries = parseKnownHosts(text);
    expect(checkHostKey(entries, 'a'.repeat(4000), key).kind).toMatch(/unknown|changed|known|other-types/);
    expect(patternsMatch('*'.repeat(5000), 'host')).toBe(true);
  });
});

describe('an error nobody foresaw', () => {
  /** An Io whose stdout breaks: the command fails in a way no code path expects. */
  function brokenIo(env: Record<string, string>) {
    let stderr = '';
    const io = {
      stdout: {
        write: () => {
          throw new TypeError('stdout is gone');
        },
      },
      stderr: { write: (s: string) => ((stderr += s), true) },
      stdin: Readable.from([]),
      env,
      cwd: PACKAGE_ROOT,
      interruptSignal: () => new AbortController().signal,
    } as unknown as Io;
    return { io, stderr: () => stderr };
  }

  it('prints one line naming it and IBFLEET_DEBUG=1, exit 1', async () => {
    const { io, stderr } = brokenIo({});
    expect(await main(['hosts'], io)).toBe(1);
    expect(stderr()).toBe(
      'ibfleet: unexpected error: TypeError: stdout is gone (a defect in ibfleet: run it again with IBFLEET_DEBUG=1 for the stack trace, and report it with the command you ran)\n',
    );
  });

  it('with IBFLEET_DEBUG=1, the stack trace', async () => {
    const { io, stderr } = brokenIo({ IBFLEET_DEBUG: '1' });
    expect(await main(['hosts'], io)).toBe(1);
    expect(stderr()).toMatch(/^ibfleet: unexpected error: TypeError: stdout is gone\n\s+at /);
  });
});
