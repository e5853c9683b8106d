/**
 * The TUI in a real terminal: tmux runs the built CLI against lab hosts and capture-pane shows what
 * a person would see — the rows, the summary, the exit code. CI has no terminal, so tmux provides
 * one; `env -u CI` because Ink draws no live frames when CI is set.
 */
import { execFileSync } from 'node:child_process';
import { rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { labExec } from '../../src/lab/index.js';
import { labPort, labSm } from '../../src/lab/rdma.js';
import { IS_ROOT, noteIfNotRoot, testLab, useLab } from '../lab/helpers.js';
import { CLI, ibfleet, json } from '../helpers/cli.js';

const LAB = testLab('e2e-tui');
const NAME = LAB.name;
const SESSION = `ibfleet-e2e-tui-${process.pid}`;
/** A tmux server of this file's own: another suite's tmux on the machine can neither see nor end it. */
const SOCKET = join(tmpdir(), `ibfleet-e2e-tui-${process.pid}.tmux`);

noteIfNotRoot('test/e2e/tui.test.ts (the TUI in tmux against lab hosts)');

function tmux(...args: string[]): string {
  return execFileSync('tmux', ['-S', SOCKET, ...args], { encoding: 'utf8' });
}

/**
 * Runs `command` in a fresh 100×30 tmux window (`rows` for a taller one) and returns the screen once
 * it printed EXIT=<code>. `interrupt`: once the screen matches it, press Ctrl-C (the shell around the
 * command catches the signal itself, so it goes on to print the command's exit code).
 */
async function inTerminal(command: string, interrupt?: RegExp, rows = 30): Promise<{ screen: string; exit: number }> {
  try {
    tmux('kill-session', '-t', SESSION);
  } catch {
    // no such session: fine
  }
  tmux(
    'new-session',
    '-d',
    '-s',
    SESSION,
    '-x',
    '100',
    '-y',
    String(rows),
    `bash -c 'trap : INT; env -u CI NO_COLOR=1 ${command}; echo EXIT=$?; sleep 120'`,
  );
  if (interrupt) {
    const until = Date.now() + 30_000;
    while (!interrupt.test(tmux('capture-pane', '-p', '-t', SESSION))) {
      if (Date.now() > until)
        throw new Error(`the screen never matched ${interrupt}:\n${tmux('capture-pane', '-p', '-t', SESSION)}`);
      await new Promise((r) => setTimeout(r, 20));
    }
    tmux('send-keys', '-t', SESSION, 'C-c');
  }
  const deadline = Date.now() + 60_000;
  for (;;) {
    const screen = tmux('capture-pane', '-p', '-t', SESSION);
    const exit = /EXIT=(\d+)/.exec(screen);
    if (exit) return { screen, exit: Number(exit[1]) };
    if (Date.now() > deadline) throw new Error(`no EXIT= after 60 s; screen:\n${screen}`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

describe.skipIf(!IS_ROOT)('the TUI in a real terminal (tmux, lab hosts; needs root)', () => {
  const lab = useLab({ name: NAME, mgmtSubnet: LAB.mgmtSubnet, hosts: [16, 34, 40], managers: { 40: 'ifupdown' } });
  afterAll(() => {
    try {
      tmux('kill-server');
    } catch {
      // already gone
    }
    rmSync(SOCKET, { force: true });
  });

  it('deploy: a header, one finished row per host with outcome and manager, the summary, exit 0', async () => {
    const { screen, exit } = await inTerminal(`node ${CLI} -i ${lab().inventoryPath} deploy --hosts all`);
    expect(exit).toBe(0);
    expect(screen).toMatch(/^ibfleet deploy · 3 hosts \(16,34,40\) · playbook dual-ib-routing/m);
    expect(screen).toMatch(
      /✓ 16 cpuserver16 +changed +networkmanager +\d+\.\ds +\+2 rules \+2 table routes −2 main routes/,
    );
    expect(screen).toMatch(/✓ 34 memserver34 +changed +netplan +\d+\.\ds/);
    expect(screen).toMatch(/✓ 40 node40 +changed +ifupdown +\d+\.\ds/);
    expect(screen).toMatch(/deploy finished in \d+\.\ds: 3 changed/);
    expect(screen).not.toMatch(/\u001b\[/);
  });

  it('status with a host down: its row says unreachable and why, the summary counts it, exit 1', async () => {
    await labExec(NAME, 40, ['sh', '-c', 'kill "$(cat /run/sshd.pid)"']);
    try {
      const { screen, exit } = await inTerminal(`node ${CLI} -i ${lab().inventoryPath} status --timeout 5`);
      expect(exit).toBe(1);
      expect(screen).toMatch(
        new RegExp(
          `^✗ unreachable +40 +connect: connection refused by ${LAB.addressPattern}\\.40:22 \\(is sshd running\\?\\)$`,
          'm',
        ),
      );
      expect(screen).toMatch(/^✓ ok +16,34 \(2 hosts\)$/m);
      expect(screen).toMatch(/^✗ status finished in \d+\.\ds: 1 unreachable, 2 ok$/m);
    } finally {
      await labExec(NAME, 40, ['/usr/sbin/sshd', '-E', '/run/sshd.log']);
    }
  });

  it('verify: the NIC×NIC matrix (rows from, columns to) with a legend, every cell passing', async () => {
    const { screen, exit } = await inTerminal(`node ${CLI} -i ${lab().inventoryPath} verify --hosts 16,34 --no-rping`);
    expect(exit, screen).toBe(0);
    const rows = screen.split('\n').filter((l) => /^(16\/ibs5f[01]|34\/ib[01]) /.test(l));
    expect(rows).toHaveLength(4);
    for (const row of rows) expect(row.match(/✓/g)).toHaveLength(2);
    expect(screen).toMatch(/rows: from, columns: to · ✓ reachable {2}✗ failed {2}· pending {2}– skipped · method ping/);
    expect(screen).toMatch(/verify finished in \d+\.\ds: 2 ok, cells 8 passed, 0 failed/);
  });

  it("verify with one host's sshd stopped: only that host is marked (unreachable), its cells not run (○) in the ping and the rping grid, no cell failed", async () => {
    await labExec(NAME, 40, ['sh', '-c', 'kill "$(cat /run/sshd.pid)"']);
    try {
      const { screen, exit } = await inTerminal(`node ${CLI} -i ${lab().inventoryPath} verify --hosts all --timeout 5`);
      expect(exit, screen).toBe(1);
      expect(screen).toMatch(/^✗ 40 node40 +unreachable /m);
      expect(screen.replace(/\s+/g, ' ')).toContain(`connection refused by ${LAB.address(40)}:22`);
      expect(screen).not.toMatch(/^✗ (16|34) /m);
      expect(screen).not.toMatch(/✗ .*→|reproduce|on node40:/);
      // Each grid (ping, then rping) has a row per NIC; 40's rows and columns are not run.
      const rows = (id: number) => screen.split('\n').filter((l) => new RegExp(`^${id}/\\w+ `).test(l));
      for (const row of rows(40)) expect(row.match(/○/g), screen).toHaveLength(4);
      for (const row of [...rows(16), ...rows(34)]) expect(row.match(/○/g), screen).toHaveLength(2);
      expect(rows(40)).toHaveLength(4);
      expect(screen).toMatch(/verify finished in \d+\.\ds: 1 unreachable, 2 ok, cells 16 passed, 0 failed, 32 not run/);
    } finally {
      await labExec(NAME, 40, ['/usr/sbin/sshd', '-E', '/run/sshd.log']);
    }
  });

  it('verify with one port down: only the host that owns it is failed, with the port as the cause; the hosts that pinged it are ok', async () => {
    await labPort(NAME, 34, 'ib1', { state: 'down' });
    try {
      // 60 rows: the failing cells listed under the grid would push the hosts' rows off a 30-row screen.
      const { screen, exit } = await inTerminal(
        `node ${CLI} -i ${lab().inventoryPath} verify --hosts all --no-rping --timeout 10`,
        undefined,
        60,
      );
      expect(exit, screen).toBe(1);
      expect(screen).toMatch(/^✗ 34 memserver34 +failed /m);
      expect(screen.replace(/\s+/g, ' ')).toContain('cells through memserver34 failed: 34/ib1: port mlx5_1/1 is DOWN');
      expect(screen).not.toMatch(/^✗ (16|40) /m);
      expect(screen).toMatch(/^✓ ok .*16,40/m);
      expect(screen).toMatch(/verify finished in \d+\.\ds: 1 failed, 2 ok/);
    } finally {
      await labPort(NAME, 34, 'ib1', { state: 'active' });
    }
  });

  it("status and verify with a port under another subnet manager (lab sm 34 ib1 2): the TUI says the fleet problem in status's and --json's words, naming host 34 NIC 2, counts it in the summary, exit 1", async () => {
    await labSm(NAME, 34, 'ib1', 2);
    try {
      const words = json<{ problems: string[] }>(
        await ibfleet(['-i', lab().inventoryPath, 'status', '--hosts', 'all', '--json']),
      ).problems;
      expect(words).toEqual([
        expect.stringMatching(/^SM LID differs: host 34 NIC 2 \(ib1 → mlx5_1\/1\) sees SM LID 2/),
      ]);
      for (const command of ['status --hosts all', 'verify --hosts all --no-rping']) {
        const { screen, exit } = await inTerminal(`node ${CLI} -i ${lab().inventoryPath} ${command}`, undefined, 60);
        expect(exit, screen).toBe(1);
        expect(screen.replace(/\s+/g, ' ')).toContain(`problem ${words[0]}`);
        expect(screen).toMatch(/finished in \d+\.\ds: .*1 fleet problem/);
      }
    } finally {
      await labPort(NAME, 34, 'ib1', { state: 'active' });
    }
  });

  it('Ctrl-C: the last frame says what was cut off, the cursor is back, exit 130', async () => {
    const { screen, exit } = await inTerminal(
      `node ${CLI} -i ${lab().inventoryPath} -c 1 verify --hosts all`,
      /^ibfleet verify · 3 hosts/m,
    );
    expect(exit, screen).toBe(130);
    expect(screen).toMatch(/verify interrupted after \d+\.\ds/);
    // Ink hides the cursor while it draws; leaving, it must show it again.
    expect(tmux('display-message', '-p', '-t', SESSION, '#{cursor_flag}').trim()).toBe('1');
  });
});
