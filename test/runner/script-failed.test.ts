/**
 * What a failed script's message quotes (runner/transport.ts scriptFailed): ibfleet's own words
 * for what failed — the first `ibfleet: … failed` line, where it passes on a tool's answer — and
 * only without one the last line printed. A change that failed puts the host back first, and what
 * the restore prints last (netplan's warning about a file's permissions) is not why it failed.
 */
import { describe, expect, it } from 'vitest';
import { AFTER_MARK, SELF_RESTORED_LINE, SELF_RESTORING_LINE } from '../../src/render/apply-script.js';
import { scriptFailed } from '../../src/runner/transport.js';

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
