/** Named runs used by the frame tests and the render-cost script. */
import type { HostRef, HostResult, Stage } from '../../src/vocabulary.js';
import type { RunAction } from '../../src/ui/tui/state.js';
import { allPairs, cell, cpu16, host, mem34, NICS, result, start, T0 } from './fixtures.js';

const end = (durationMs: number, results: readonly HostResult[] = [], interrupted = false): RunAction => ({
  type: 'runEnd',
  event: { results, cells: [], durationMs, interrupted },
});

/** Two hosts mid-deploy: 16 pushing, 34 still probing. */
export const runningTwo: readonly RunAction[] = [
  start('deploy', [cpu16, mem34]),
  { type: 'hostStart', host: cpu16, at: T0 + 100 },
  { type: 'stage', host: cpu16, stage: 'connect', at: T0 + 100 },
  { type: 'stage', host: cpu16, stage: 'push', at: T0 + 1900 },
  { type: 'hostStart', host: mem34, at: T0 + 300 },
  { type: 'stage', host: mem34, stage: 'probe', at: T0 + 700 },
];

/** Both hosts deployed: 16 changed, 34 already right. */
export const allSucceeded: readonly RunAction[] = [
  start('deploy', [cpu16, mem34]),
  { type: 'hostStart', host: cpu16, at: T0 },
  { type: 'hostStart', host: mem34, at: T0 },
  {
    type: 'hostDone',
    result: result(cpu16, 'changed', {
      manager: 'networkmanager',
      durationMs: 5230,
      reasons: [
        'added route 172.16.0.0/16 table 941',
        'added rule from 172.16.16.1 lookup 941',
        'installed NetworkManager hook',
      ],
    }),
  },
  { type: 'hostDone', result: result(mem34, 'unchanged', { manager: 'netplan', durationMs: 3080 }) },
  end(6100),
];

const web40 = host(40, 'cpuserver40');

/** One changed, one failed in apply (with its error output), one unreachable. */
export const mixedFailures: readonly RunAction[] = [
  start('deploy', [cpu16, mem34, web40]),
  {
    type: 'hostDone',
    result: result(cpu16, 'changed', {
      manager: 'networkmanager',
      durationMs: 5230,
      reasons: ['added route 172.16.0.0/16 table 941'],
    }),
  },
  {
    type: 'hostDone',
    result: result(mem34, 'failed', {
      manager: 'netplan',
      durationMs: 2750,
      reasons: ['apply: routing script failed'],
      error: {
        stage: 'apply',
        message: 'routing script failed',
        exitCode: 2,
        stderrTail: [
          '+ ip -4 route replace 172.16.0.0/16 dev ib0 table 941',
          '+ ip -4 rule add from 172.16.34.1 lookup 941 priority 941',
          '+ ip -4 route replace 172.16.0.0/16 dev ib1 table 942',
          'Cannot find device "ib1"',
          '+ exit 2',
          '',
        ].join('\n'),
      },
    }),
  },
  {
    type: 'hostDone',
    result: result(web40, 'unreachable', {
      durationMs: 60_000,
      error: {
        stage: 'connect',
        message: 'no answer from 10.208.130.40:22 within 60s; is the host up?',
        stderrTail: '',
      },
    }),
  },
  end(60_400),
];

const FLEET = Array.from({ length: 254 }, (_, i) => host(i + 1, `node${String(i + 1).padStart(3, '0')}`));
const STAGES: readonly Stage[] = ['connect', 'probe', 'plan', 'push', 'apply'];

/**
 * 254 hosts, concurrency 32, seen mid-run at T0 + 40 s: hosts 1–200 done (40 failed,
 * 77 unreachable), 201–232 running at various stages, 233–254 waiting.
 */
export function bigFleetMidRun(): RunAction[] {
  const actions: RunAction[] = [start('deploy', FLEET, { concurrency: 32 })];
  for (const h of FLEET.slice(0, 200)) {
    actions.push({ type: 'hostStart', host: h, at: T0 + h.id * 100 });
    if (h.id === 40) {
      actions.push({
        type: 'hostDone',
        result: result(h, 'failed', {
          manager: 'ifupdown',
          durationMs: 3100,
          error: {
            stage: 'push',
            message: 'cannot write /etc/network/if-up.d/ibfleet-routes: read-only file system',
            stderrTail: 'sftp: EROFS',
          },
        }),
      });
    } else if (h.id === 77) {
      actions.push({
        type: 'hostDone',
        result: result(h, 'unreachable', {
          durationMs: 30_000,
          error: { stage: 'connect', message: 'connection refused by 10.208.130.77:22', stderrTail: '' },
        }),
      });
    } else {
      actions.push({
        type: 'hostDone',
        result: result(h, h.id % 4 === 0 ? 'unchanged' : 'changed', { manager: 'netplan', durationMs: 4000 }),
      });
    }
  }
  for (const h of FLEET.slice(200, 232)) {
    const k = h.id - 201;
    actions.push({ type: 'hostStart', host: h, at: T0 + 36_000 + k * 100 });
    actions.push({ type: 'stage', host: h, stage: STAGES[k % STAGES.length]!, at: T0 + 37_000 + k * 100 });
  }
  return actions;
}

export function bigFleetFinished(): RunAction[] {
  const actions: RunAction[] = bigFleetMidRun().filter((a) => a.type !== 'runEnd');
  for (const h of FLEET.slice(200))
    actions.push({ type: 'hostDone', result: result(h, 'changed', { manager: 'netplan' }) });
  actions.push(end(52_300));
  return actions;
}

const aliceHosts: readonly HostRef[] = [16, 17, 18, 19, 20, 34, 40, 42, 44, 77].map((id) =>
  id === 16 ? cpu16 : id === 34 ? mem34 : host(id, `host${id}`),
);

/** Status over ten hosts: six compliant, two with the same drift, one with other drift, one down. */
export const statusFolding: readonly RunAction[] = [
  start('status', aliceHosts, { playbook: undefined }),
  ...aliceHosts.map((h): RunAction => {
    if (h.id === 40 || h.id === 42) {
      return {
        type: 'hostDone',
        result: result(h, 'drift', {
          durationMs: 800,
          reasons: [
            'rule from 172.16.H.2 lookup 942 missing',
            'hook /etc/network/if-up.d/ibfleet-routes not installed',
          ],
        }),
      };
    }
    if (h.id === 44)
      return {
        type: 'hostDone',
        result: result(h, 'drift', { durationMs: 800, reasons: ['main table still has 172.16.0.0/16 dev ib1'] }),
      };
    if (h.id === 77) {
      return {
        type: 'hostDone',
        result: result(h, 'unreachable', {
          durationMs: 10_000,
          error: { stage: 'connect', message: 'connection refused', stderrTail: '' },
        }),
      };
    }
    return { type: 'hostDone', result: result(h, 'ok', { durationMs: 700 }) };
  }),
  end(10_200),
];

const verifyStart = (): RunAction[] => [
  start('verify', [cpu16, mem34], { playbook: undefined }),
  { type: 'matrix', cells: allPairs('ping') },
];

/** Half of the 12 ping cells in; 16/ibs5f1 → 34/ib1 failed. */
export function verifyHalf(): RunAction[] {
  const [a, b, c, d] = NICS as [(typeof NICS)[0], (typeof NICS)[0], (typeof NICS)[0], (typeof NICS)[0]];
  return [
    ...verifyStart(),
    { type: 'cell', cell: cell(a, b, true) },
    { type: 'cell', cell: cell(a, c, true) },
    { type: 'cell', cell: cell(a, d, true) },
    { type: 'cell', cell: cell(b, a, true) },
    { type: 'cell', cell: cell(b, c, true) },
    { type: 'cell', cell: cell(b, d, false, { detail: '0/3 replies (100% loss)' }) },
  ];
}

export function verifyComplete(): RunAction[] {
  const [a, b, c, d] = NICS as [(typeof NICS)[0], (typeof NICS)[0], (typeof NICS)[0], (typeof NICS)[0]];
  return [
    ...verifyHalf(),
    { type: 'cell', cell: cell(c, a, true) },
    { type: 'cell', cell: cell(c, b, true) },
    { type: 'cell', cell: cell(c, d, true) },
    { type: 'cell', cell: cell(d, a, true) },
    { type: 'cell', cell: cell(d, b, false, { detail: '0/3 replies (100% loss)' }) },
    { type: 'cell', cell: cell(d, c, true) },
    { type: 'hostDone', result: result(cpu16, 'ok', { durationMs: 3400 }) },
    { type: 'hostDone', result: result(mem34, 'ok', { durationMs: 3300 }) },
    end(3600),
  ];
}

/** --dry-run on one host: what would change and the script that would run. */
const PLAN_34: Partial<HostResult> = {
  manager: 'netplan',
  durationMs: 1900,
  reasons: ['ib1: table 942 ← 172.16.0.0/16 src 172.16.34.2', 'ib1: rule 942: from 172.16.34.2 lookup 942'],
  changes: [
    { kind: 'table-route', action: 'add', subject: 'ib1', text: 'ib1: table 942 ← 172.16.0.0/16 src 172.16.34.2' },
    { kind: 'rule', action: 'add', subject: 'ib1', text: 'ib1: rule 942: from 172.16.34.2 lookup 942' },
  ],
  planText:
    'ip -4 route replace 172.16.0.0/16 dev ib1 src 172.16.34.2 table 942\nip -4 rule add from 172.16.34.2 lookup 942 priority 942\n',
};

export const dryRunOne: readonly RunAction[] = [
  start('deploy', [mem34], { dryRun: true }),
  { type: 'hostDone', result: result(mem34, 'planned', PLAN_34) },
  end(2000),
];

export const dryRunScripts: readonly RunAction[] = [
  start('deploy', [mem34], { dryRun: true, showScripts: true }),
  { type: 'hostDone', result: result(mem34, 'planned', PLAN_34) },
  end(2000),
];

/** Ctrl-C while 34 is still pushing: the TUI is unmounted before the run ends. */
export const interruptedTwo: readonly RunAction[] = [
  ...runningTwo,
  {
    type: 'hostDone',
    result: result(cpu16, 'changed', {
      manager: 'networkmanager',
      durationMs: 2500,
      reasons: ['added route 172.16.0.0/16 table 941'],
    }),
  },
  { type: 'detach', at: T0 + 4000 },
];
