/**
 * A simulated deploy through the real TUI in whatever terminal runs it — for looking at it, and
 * for the tmux check of cursor and Ctrl-C handling. No SSH, no lab.
 *
 *   npx tsx test/ui/demo.ts [hosts=6] [concurrency=4] [stageMs=400]
 *
 * Ctrl-C does what a command does: stop, unmount the TUI (last frame stays), exit 130.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import type { HostRef, Stage } from '../../src/vocabulary.js';
import { createTui } from '../../src/ui/tui/index.js';

const [hostCount = 6, concurrency = 4, stageMs = 400] = process.argv.slice(2).map(Number);
const hosts: HostRef[] = Array.from({ length: hostCount }, (_, i) => ({
  id: 16 + i,
  name: `cpuserver${16 + i}`,
  target: `10.208.130.${16 + i}`,
}));
const stages: readonly Stage[] = ['connect', 'probe', 'plan', 'push', 'apply', 'verify'];

const tui = await createTui(
  { stdout: process.stdout, stderr: process.stderr, stdin: process.stdin, env: process.env },
  { command: 'deploy' },
);
await tui.ready();
let interrupted = false;
process.on('SIGINT', () => {
  interrupted = true;
  tui.unmount();
});

const startedAt = Date.now();
tui.onRunStart({
  command: 'deploy',
  hosts,
  concurrency,
  inventory: 'inventory/lab.yaml',
  playbook: 'playbooks/dual-ib-routing.yaml',
  startedAt,
});
let next = 0;
async function worker(): Promise<void> {
  while (next < hosts.length && !interrupted) {
    const host = hosts[next++]!;
    const began = Date.now();
    tui.onHostStart(host, began);
    for (const stage of stages) {
      if (interrupted) return;
      tui.onStage(host, stage, Date.now());
      await sleep(stageMs * (0.5 + ((host.id * 7) % 10) / 10));
    }
    const failed = host.id % 5 === 0;
    tui.onHostDone({
      host,
      status: failed ? 'failed' : host.id % 3 === 0 ? 'unchanged' : 'changed',
      manager: host.id % 2 ? 'netplan' : 'networkmanager',
      durationMs: Date.now() - began,
      reasons: failed ? [] : ['added route 172.16.0.0/16 table 941', `added rule from 172.16.${host.id}.1 lookup 941`],
      ...(failed
        ? {
            error: {
              stage: 'apply' as const,
              message: 'routing script failed',
              exitCode: 2,
              stderrTail: `+ ip -4 route replace 172.16.0.0/16 dev ib1 table 942\nCannot find device "ib1"\n+ exit 2`,
            },
          }
        : {}),
    });
  }
}
await Promise.all(Array.from({ length: concurrency }, worker));
if (!interrupted) tui.onRunEnd({ results: [], cells: [], durationMs: Date.now() - startedAt, interrupted: false });
await tui.waitUntilExit();
process.exitCode = interrupted ? 130 : 0;
