/**
 * The routing program's check of the files that differ by network manager (the hooks), run by sh on
 * real files from routes.conf's one-of lines: each manager's hooks are a set — netplan's are two,
 * routable.d and configured.d — and the set installed must be whole and as rendered, and exactly
 * one set must be there.
 */
import { execFileSync } from 'node:child_process';
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import type { Manager } from '../../../src/inventory/model.js';
import { fileCheckRows, fileChecksOf } from '../../../src/render/check-files.js';
import type { RenderedFile } from '../../../src/script/rendered-file.js';
import { ROUTES_PROGRAM, ROUTES_PROGRAM_VERSION } from '../../../src/script/routes-program.js';

const dir = mkdtempSync(join(tmpdir(), 'ibfleet-check-files-'));
const program = join(dir, 'ibfleet-routes');
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const hook = (manager: Manager, name: string): RenderedFile => ({
  path: join(dir, name),
  mode: 0o755,
  content: `#!/bin/sh\n# ${manager} ${name}\n`,
  role: 'hook',
  manager,
  kind: 'hook',
  label: `hook ${name}`,
});
const netplan = [hook('netplan', 'routable'), hook('netplan', 'configured')];
const ifupdown = [hook('ifupdown', 'if-up')];
const nm = [hook('networkmanager', 'dispatcher')];
const checks = fileChecksOf(
  new Map<Manager, readonly RenderedFile[]>([
    ['netplan', netplan],
    ['ifupdown', ifupdown],
    ['networkmanager', nm],
  ]),
);

/** The drift lines the check prints with exactly `installed` on disk. */
function driftWith(installed: readonly RenderedFile[]): string[] {
  for (const f of [...netplan, ...ifupdown, ...nm]) rmSync(f.path, { force: true });
  for (const f of installed) {
    writeFileSync(f.path, f.content);
    chmodSync(f.path, f.mode);
  }
  // The program's --check on this machine, with lo as its one NIC: what it says of lo is not this test's.
  writeFileSync(program, ROUTES_PROGRAM, { mode: 0o755 });
  writeFileSync(
    join(dir, 'routes.conf'),
    [
      `ibfleet-routes ${ROUTES_PROGRAM_VERSION}`,
      'host 1',
      'subnet 127.0.0.0/8',
      'nic lo 127.0.0.1 999 999 1 127.0.0.2',
      ...fileCheckRows(checks),
      '',
    ].join('\n'),
  );
  let out = '';
  try {
    out = execFileSync('sh', [program, '--check'], { encoding: 'utf8' });
  } catch (error) {
    out = (error as { stdout: string }).stdout;
  }
  return out.split('\n').filter((l) => l !== '' && !l.startsWith('lo: '));
}

describe.skipIf(process.getuid?.() !== 0)(
  "check_one_of: one manager's hooks, whole (needs root: the files must be root's)",
  () => {
    it("renders one set per manager, netplan's with both hooks", () => {
      expect(checks).toHaveLength(1);
      expect(fileCheckRows(checks).map((r) => r.split(' ').slice(0, 5).join(' '))).toEqual([
        `one-of hook 1 ${nm[0]!.path} 755`,
        `one-of hook 2 ${ifupdown[0]!.path} 755`,
        `one-of hook 3 ${netplan[0]!.path} 755`,
        `one-of hook 3 ${netplan[1]!.path} 755`,
      ]);
    });

    it.each([
      ["netplan's two hooks", netplan, []],
      ["ifupdown's hook", ifupdown, []],
      [
        "netplan's routable.d hook without the configured.d one (a host deployed before it existed)",
        [netplan[0]!],
        ['hook configured is missing'],
      ],
      [
        'none',
        [],
        [
          `hook is missing (ibfleet installs it for the host's network manager: ${[...nm, ...ifupdown, ...netplan].map((f) => f.path).join(', ')})`,
        ],
      ],
      [
        "netplan's and NetworkManager's",
        [...netplan, ...nm],
        [
          `the hook files of 2 network managers are installed (${[...nm, ...netplan].map((f) => f.path).join(', ')}): the host's network manager needs its own (ibfleet deploy removes the others)`,
        ],
      ],
    ] as const)('installed: %s', (_, installed, drift) => {
      expect(driftWith(installed)).toEqual(drift);
    });

    it('an edited hook of the set installed is drift, named', () => {
      expect(driftWith([netplan[0]!, { ...netplan[1]!, content: 'edited' }])).toEqual([
        'hook configured was modified (content differs from the rendered file)',
      ]);
    });
  },
);
