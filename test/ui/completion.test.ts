/**
 * Shell completion: the engine as a table (line → candidates), then each shell's real script driving
 * the built CLI — bash through its completion function with COMP_LINE/COMP_WORDS as bash sets them,
 * fish through `complete -C`, zsh with its completion builtins stubbed (they only exist inside a
 * widget). `ibfleet` is found on PATH, as after scripts/setup.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildProgram } from '../../src/cli.js';
import type { Io } from '../../src/commands/context.js';
import { complete, type CompletionSources } from '../../src/ui/completion/engine.js';
import { commandSpec } from '../../src/command-line.js';
import { CLI } from '../helpers/cli.js';
import { seedsFleet } from '../lab/fleet.js';
import { loadInventory } from '../../src/inventory/load.js';

const ROOT = resolve(CLI, '../..');
const ODD = 'test/fixtures/odd-names.yaml';

const silentIo: Io = {
  stdout: { write: () => true },
  stderr: { write: () => true },
  stdin: process.stdin,
  env: {},
  cwd: ROOT,
  interruptSignal: () => new AbortController().signal,
};
const spec = commandSpec(buildProgram(silentIo, () => undefined));
const sources: CompletionSources = {
  fleet: (inventory) => (inventory === undefined || inventory === 'seeds.yaml' ? seedsFleet() : undefined),
  labFleet: (name) => (name === 'mine' ? seedsFleet() : undefined),
  labNames: () => ['demo', 'mine'],
};
const values = (line: string, env: Record<string, string> = {}) => {
  const c = complete(spec, line, sources, env);
  return c.kind === 'words' ? c.candidates.map((x) => x.value) : `${c.kind}:${c.before}|${c.prefix}`;
};

describe('what completes where (the engine)', () => {
  it.each([
    [
      'ibfleet ',
      [
        'hosts',
        'render',
        'lab',
        'deploy',
        'status',
        'rollback',
        'verify',
        'env',
        'onboard',
        'offboard',
        'exec',
        'export',
        'completion',
      ],
    ],
    ['ibfleet de', ['deploy']],
    [
      'ibfleet lab ',
      ['up', 'down', 'list', 'reboot', 'flap', 'restart', 'exec', 'port', 'gid', 'sm', 'pkey', 'arp-flux'],
    ],
    ['ibfleet env --for ', ['nccl', 'ucx', 'mpi']],
    ['ibfleet env --format=', ['--format=sh', '--format=json']],
    ['ibfleet deploy --d', ['--dry-run']],
    ['ibfleet deploy --hosts ', ['all', '16', '34', 'cpuserver16', 'memserver34', '@cpu', '@mem', 'pair:alice']],
    ['ibfleet deploy --hosts m', ['memserver34']],
    ['ibfleet status --hosts 16,', ['16,34', '16,memserver34', '16,@cpu', '16,@mem', '16,pair:alice']],
    [
      'ibfleet status --hosts cpuserver16,',
      ['cpuserver16,34', 'cpuserver16,memserver34', 'cpuserver16,@cpu', 'cpuserver16,@mem', 'cpuserver16,pair:alice'],
    ],
    ['ibfleet status --hosts=pair:', ['--hosts=pair:alice']],
    ['ibfleet -c 8 rollback --hosts @', ['@cpu', '@mem']],
    ['ibfleet verify --pair ', ['alice']],
    ['ibfleet completion ', ['bash', 'zsh', 'fish']],
    ['ibfleet lab down --name ', ['demo', 'mine']],
    [
      'ibfleet lab reboot --name mine ',
      ['all', '16', '34', 'cpuserver16', 'memserver34', '@cpu', '@mem', 'pair:alice'],
    ],
    // Without --name (typed after the hosts), the hosts of the one lab that is up.
    ['ibfleet lab reboot ', ['all', '16', '34', 'cpuserver16', 'memserver34', '@cpu', '@mem', 'pair:alice']],
    ['ibfleet lab reboot 16 --name ', ['demo', 'mine']],
    ['ibfleet lab reboot --name demo ', []],
    ['ibfleet lab up --hosts ', []],
    ['ibfleet -i ', 'files:|'],
    ['ibfleet deploy --playbook play', 'files:|play'],
    ['ibfleet render --out=ou', 'dirs:--out=|ou'],
  ])('%s', (line, expected) => {
    expect(values(line)).toEqual(expected);
  });

  it('lab reboot without --name while several labs are up: each host once, described with its labs; no `all` (of which lab?)', () => {
    const other = loadInventory(
      'fabric: { subnet: 172.16.0.0/16 }\nhosts:\n  16: { name: cpuserver16 }\n  40: { name: node40 }\n',
      'other.yaml',
    );
    const two: CompletionSources = {
      ...sources,
      labFleet: (name) => (name === 'mine' ? seedsFleet() : name === 'demo' ? other : undefined),
    };
    const c = complete(spec, 'ibfleet lab reboot ', two);
    const candidates = c.kind === 'words' ? c.candidates : [];
    expect(candidates.map((x) => x.value)).toEqual([
      '16',
      '40',
      'cpuserver16',
      'node40',
      '34',
      'memserver34',
      '@cpu',
      '@mem',
      'pair:alice',
    ]);
    expect(candidates.find((x) => x.value === '16')?.description).toBe('lab demo: cpuserver16, mine: cpuserver16');
    expect(candidates.find((x) => x.value === '34')?.description).toBe('lab mine: memserver34');
  });

  it('takes host sets from the inventory the line names: -i, --inventory=, or IBFLEET_INVENTORY before or in the environment', () => {
    expect(values('ibfleet -i other.yaml deploy --hosts ')).toEqual([]);
    expect(values('ibfleet -i seeds.yaml deploy --hosts 3')).toEqual(['34']);
    expect(values('ibfleet deploy --inventory=seeds.yaml --hosts 3', { IBFLEET_INVENTORY: 'other.yaml' })).toEqual([
      '34',
    ]);
    expect(
      values('IBFLEET_INVENTORY=seeds.yaml ibfleet deploy --hosts 3', { IBFLEET_INVENTORY: 'other.yaml' }),
    ).toEqual(['34']);
    expect(values('ibfleet deploy --hosts 3', { IBFLEET_INVENTORY: 'other.yaml' })).toEqual([]);
  });

  it('lists options of the command and the global ones', () => {
    const flags = values('ibfleet deploy -') as string[];
    expect(flags).toEqual(
      expect.arrayContaining(['--hosts', '--dry-run', '-n', '-K', '--inventory', '-i', '--timeout', '--json']),
    );
    expect(values('ibfleet deploy --')).not.toContain('-n');
  });
});

/** A PATH whose `ibfleet` is this checkout's build, as scripts/setup's npm link makes it. */
let bin: string;
beforeAll(() => {
  bin = mkdtempSync(join(tmpdir(), 'ibfleet-completion-'));
  writeFileSync(
    join(bin, 'ibfleet'),
    `#!/bin/sh\nexec ${JSON.stringify(process.execPath)} ${JSON.stringify(CLI)} "$@"\n`,
    { mode: 0o755 },
  );
  for (const shell of ['bash', 'zsh', 'fish'])
    writeFileSync(
      join(bin, `completion.${shell}`),
      execFileSync(process.execPath, [CLI, 'completion', shell], { encoding: 'utf8' }),
    );
});
afterAll(() => rmSync(bin, { recursive: true, force: true }));

const has = (shell: string) => spawnSync('sh', ['-c', `command -v ${shell}`]).status === 0;
const runShell = (shell: string, args: string[], script: string, ...params: string[]) =>
  // fish has no $0: its arguments after the script are $argv.
  execFileSync(shell, [...args, '-c', script, ...(shell === 'fish' ? [] : [shell]), ...params], {
    encoding: 'utf8',
    cwd: ROOT,
    env: { ...process.env, PATH: `${bin}:${process.env.PATH}`, IBFLEET_INVENTORY: undefined },
  });

describe('bash: the generated completion function, as bash calls it', () => {
  /** Sets COMP_* as bash does for the line (cursor at its end) and prints COMPREPLY, one per line. */
  const bash = (line: string): string[] => {
    const script = `
      source ${JSON.stringify(join(bin, 'completion.bash'))}
      COMP_LINE=$1 COMP_POINT=\${#1}
      # bash splits COMP_WORDS at COMP_WORDBREAKS too; the function reads COMP_LINE, and COMP_WORDS[0].
      read -ra COMP_WORDS <<<"$1"; COMP_CWORD=\${#COMP_WORDS[@]}
      _ibfleet
      printf '%s\\n' "\${COMPREPLY[@]}"`;
    return execFileSync('bash', ['-c', script, 'bash', line], {
      encoding: 'utf8',
      cwd: ROOT,
      env: { ...process.env, PATH: `${bin}:${process.env.PATH}`, IBFLEET_INVENTORY: undefined },
    })
      .split('\n')
      .filter(Boolean);
  };

  it('is registered for ibfleet and passes bash -n', () => {
    expect(runShell('bash', ['-n'], `source ${join(bin, 'completion.bash')}`)).toBe('');
    expect(runShell('bash', [], `source ${join(bin, 'completion.bash')}; complete -p ibfleet`)).toBe(
      'complete -F _ibfleet ibfleet\n',
    );
  });

  it("completes commands, options and the inventory's hosts; after : or = only the rest of the word, as readline replaces it", () => {
    expect(bash('ibfleet dep')).toEqual(['deploy']);
    expect(bash('ibfleet deploy --dr')).toEqual(['--dry-run']);
    expect(bash('ibfleet deploy --hosts ')).toEqual([
      'all',
      '16',
      '34',
      'cpuserver16',
      'memserver34',
      '@cpu',
      '@mem',
      'pair:alice',
    ]);
    expect(bash('ibfleet deploy --hosts 16,')).toEqual([
      '16,34',
      '16,memserver34',
      '16,@cpu',
      '16,@mem',
      '16,pair:alice',
    ]);
    expect(bash('ibfleet deploy --hosts pair:')).toEqual(['alice']);
    expect(bash('ibfleet deploy --hosts=16,m')).toEqual(['16,memserver34']);
  });

  it('reads hosts from -i and from IBFLEET_INVENTORY=… before the command', () => {
    expect(bash(`ibfleet -i ${ODD} status --hosts `)).toEqual(['all', '7', '8', 'pkeyhost7', 'longnames8']);
    expect(bash(`IBFLEET_INVENTORY=${ODD} ibfleet status --hosts p`)).toEqual(['pkeyhost7']);
  });

  it('completes file names for -i', () => {
    expect(bash('ibfleet -i inventory/fl')).toEqual(['inventory/fleet.yaml']);
  });
});

describe.skipIf(!has('fish'))('fish: complete -C with the generated script', () => {
  const fish = (line: string) =>
    runShell('fish', [], `source ${join(bin, 'completion.fish')}; complete -C"$argv[1]"`, line)
      .split('\n')
      .filter(Boolean)
      .map((l) => l.split('\t')[0]);

  it('passes fish -n and completes commands, hosts, pair owners and files', () => {
    expect(runShell('fish', ['-n'], `source ${join(bin, 'completion.fish')}`)).toBe('');
    expect(fish('ibfleet dep')).toEqual(['deploy']);
    expect(fish('ibfleet deploy --hosts 16,').sort()).toEqual([
      '16,34',
      '16,@cpu',
      '16,@mem',
      '16,memserver34',
      '16,pair:alice',
    ]);
    expect(fish('ibfleet deploy --hosts=pair:')).toEqual(['--hosts=pair:alice']);
    expect(fish('ibfleet -i inventory/fl')).toEqual(['inventory/fleet.yaml']);
  });
});

describe.skipIf(!has('zsh'))(
  'zsh: the generated function with compadd/_files stubbed (they exist only inside a completion widget)',
  () => {
    const zsh = (line: string) =>
      runShell(
        'zsh',
        ['-f'],
        `compdef() { :; }
       compadd() { while [[ $1 == -* && $1 != -a ]]; do [[ $1 == -d ]] && shift; shift; done; shift; print -rl -- "\${(@P)1}"; }
       _files() { print -r -- "files $* $PREFIX"; }
       compset() { PREFIX=\${PREFIX#*=}; }
       source ${join(bin, 'completion.zsh')}
       words=(\${(z)1}); [[ $1 == *' ' ]] && words+=(''); CURRENT=\${#words}; PREFIX=\${words[CURRENT]}
       _ibfleet`,
        line,
      )
        .split('\n')
        .filter(Boolean);

    it('passes zsh -n and completes commands, hosts and files', () => {
      expect(runShell('zsh', ['-n', '-f'], `source ${join(bin, 'completion.zsh')}`)).toBe('');
      expect(zsh('ibfleet dep')).toEqual(['deploy']);
      expect(zsh('ibfleet deploy --hosts 16,')).toEqual([
        '16,34',
        '16,memserver34',
        '16,@cpu',
        '16,@mem',
        '16,pair:alice',
      ]);
      expect(zsh('ibfleet --inventory=inventory/fl')).toEqual(['files  inventory/fl']);
    });
  },
);

if (!has('zsh') || !has('fish'))
  console.warn(
    'NOTE: zsh/fish completion checks skipped for the shells not installed here (apt install zsh fish to include them)',
  );
