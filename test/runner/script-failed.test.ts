/**
 * What a failed script's message quotes (runner/transport.ts scriptFailed): ibfleet's own words
 * for what failed — the first `ibfleet: … failed` line, where it passes on a tool's answer — and
 * only without one the last line printed. A change that failed puts the host back first, and what
 * the restore prints last (netplan's warning about a file's permissions) is not why it failed.
 */
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { AFTER_MARK, SELF_RESTORED_LINE, SELF_RESTORING_LINE } from '../../src/render/apply-script.js';
import { scriptFailed } from '../../src/runner/transport.js';
import { renderNetplanApply, renderNetplanCheck } from '../../src/script/netplan.js';
import { sentShell } from '../../src/script/sent-shell.js';
import { shellQuote } from '../../src/script/shell.js';
import { LINKS_NETPLAN_PATH } from '../../src/steps/links/decide.js';

const NETPLAN_WARNING =
  '** (generate:4242): WARNING **: 20:01:02.123: Permissions for /etc/netplan/01.yaml are too open.';

const ROUTES_FAILED = 'ibfleet-routes: ib1: cannot read /proc/sys/net/ipv4/conf/ib1/accept_local';

describe('scriptFailed', () => {
  it.each([
    [
      "a manager's command failed, then the self-restore's netplan warned (issue 29)",
      `ibfleet: wrote /etc/netplan/50-ibfleet-links.yaml\n${SELF_RESTORING_LINE}\nibfleet: restored /etc/netplan/50-ibfleet-links.yaml\n${SELF_RESTORED_LINE}\n`,
      `ibfleet: telling netplan to apply failed (exit 1): Error in network definition: unknown key 'infiniband-mode'\n${NETPLAN_WARNING}\n`,
      "applying the change failed (exit 1): ibfleet: telling netplan to apply failed (exit 1): Error in network definition: unknown key 'infiniband-mode'",
    ],
    [
      'two failures: the first is quoted, the second followed from it',
      '',
      'ibfleet: bringing up ib0 with nmcli failed (exit 4): Error: Connection activation failed.\nibfleet: bringing up ib1 with nmcli failed (exit 4): Error: skipped\n',
      'applying the change failed (exit 1): ibfleet: bringing up ib0 with nmcli failed (exit 4): Error: Connection activation failed.',
    ],
    [
      "the routing script failed and the change put the host back (bullseye): its reason, not the closing probe's end mark",
      `ibfleet: networkctl reconfigure ib0 ib1\nibfleet-routes: ib0: unchanged\n${ROUTES_FAILED}\n${SELF_RESTORING_LINE}\nibfleet: removed /etc/ibfleet/links\n${SELF_RESTORED_LINE}\n${AFTER_MARK}\n@@ibfleet probe 3\n@@ibfleet end\n`,
      '',
      `applying the change failed (exit 1): ${ROUTES_FAILED}`,
    ],
    [
      'the same on trixie, whose restore says on stderr that networkctl failed',
      `ibfleet-routes: ib0: unchanged\n${ROUTES_FAILED}\n${SELF_RESTORING_LINE}\n${SELF_RESTORED_LINE}\n${AFTER_MARK}\n@@ibfleet end\n`,
      `${NETPLAN_WARNING}\nFailed to send reload request: No such file or directory\n`,
      `applying the change failed (exit 1): ${ROUTES_FAILED}`,
    ],
    [
      'only the restore says failed: the last line, as before',
      `${SELF_RESTORING_LINE}\n${SELF_RESTORED_LINE}\n`,
      'ibfleet-routes: ib0: does not carry 172.16.34.1\n',
      'applying the change failed (exit 1): ibfleet-routes: ib0: does not carry 172.16.34.1',
    ],
    [
      'nothing of ibfleet’s: the last line',
      'a\nb\n',
      'sh: 3: oops: not found\n',
      'applying the change failed (exit 1): sh: 3: oops: not found',
    ],
    ['nothing printed', '', '', 'applying the change failed (exit 1)'],
  ])('%s', (_what, stdout, stderr, message) => {
    const error = scriptFailed('apply', 'applying the change', { code: 1, signal: undefined, stdout, stderr });
    expect(error.message).toBe(message);
  });
});

describe('a host netplan file that netplan generate rejects: the change refuses it, its restore fails on it again (issue 29)', () => {
  const work = mkdtempSync(join(tmpdir(), 'ibfleet-netplan-refused-'));
  afterAll(() => rmSync(work, { recursive: true, force: true }));

  it("the message quotes the change's check in netplan's own words, not the restore's 'netplan generate failed'", () => {
    // netplan as it answers with the host's file that it rejects: its warning, then the error.
    mkdirSync(join(work, 'bin'));
    writeFileSync(
      join(work, 'bin', 'netplan'),
      `#!/bin/sh\necho '${NETPLAN_WARNING}' >&2\necho "/etc/netplan/02-bad.yaml:5:18: Error in network definition: address 'x' is missing /prefixlength" >&2\nexit 1\n`,
      { mode: 0o755 },
    );
    const staged = join(work, 'staged.yaml');
    writeFileSync(staged, 'network: {version: 2}\n');
    const script = [
      'status=0',
      ...renderNetplanCheck(shellQuote(staged), LINKS_NETPLAN_PATH),
      `restore_change() {\n${renderNetplanApply(true, ['ib0']).join('\n')}\n}`,
      sentShell('self-restore'),
      'self_restore',
      'exit "$status"',
    ].join('\n');
    const run = spawnSync('sh', ['-c', script], {
      encoding: 'utf8',
      env: { ...process.env, PATH: `${join(work, 'bin')}:${process.env.PATH ?? ''}` },
    });
    expect(run.status).toBe(1);
    // The restore's own failure went to stdout, after the line that says it began.
    expect(run.stdout.slice(run.stdout.indexOf(SELF_RESTORING_LINE))).toContain('\nibfleet: netplan generate failed\n');
    expect(run.stderr).not.toContain('netplan generate failed');
    const error = scriptFailed('apply', 'applying the change', {
      code: run.status,
      signal: undefined,
      stdout: run.stdout,
      stderr: run.stderr,
    });
    expect(error.message).toBe(
      `applying the change failed (exit 1): ibfleet: netplan generate with ${LINKS_NETPLAN_PATH} among this host's netplan files failed; nothing was changed: ${NETPLAN_WARNING} /etc/netplan/02-bad.yaml:5:18: Error in network definition: address 'x' is missing /prefixlength`,
    );
  });
});
