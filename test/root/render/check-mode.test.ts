/**
 * The routing script's --check, run for real in throw-away network namespaces (test/helpers/netns.ts):
 * it changes nothing, exits 0 when every NIC is as deployed and 1 otherwise, and says each way a
 * NIC is not, one line each, in the words `ibfleet status` uses — checked against status itself,
 * fed by the real probe run in the same namespace. Named NICs (`--check ib0 ib1`) keep the
 * machine's own /etc out of it: ibfleet's files are checked on lab hosts (test/e2e/fit.test.ts).
 * Needs root; skipped with a note otherwise.
 */
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { readProbe } from '../../../src/plan/change-output.js';
import { assessStatus } from '../../../src/plan/host-plan.js';
import { writeRoutesProgram } from '../../helpers/routes-program.js';
import { NO_SYSTEMD_NOTE } from '../../../src/steps/persist/systemd.js';
import { renderProbeScript } from '../../../src/render/probe-script.js';
import { hostOf, loadFixtureFleet, loadFixturePlaybook } from '../../fixtures/fixtures.js';
import { useFabrics, type ExecResult, type Fabric } from '../../helpers/netns.js';

const CAN_RUN = process.getuid?.() === 0;
if (!CAN_RUN)
  console.warn(
    'test/root/render/check-mode.test.ts: skipped — running the routing script needs root, iproute2 and unshare.',
  );

const seeds = loadFixtureFleet('seeds.yaml');
const playbook = loadFixturePlaybook();
const host = hostOf(seeds, 34);
const IFACES = host.nics.map((n) => n.iface);

const { work: workDir, createFor: labFor } = useFabrics('ibfleet-check-');
let script = '';

beforeAll(() => {
  if (CAN_RUN) script = writeRoutesProgram(workDir, playbook, host, seeds);
});

const routes = (lab: Fabric, ...args: string[]): ExecResult => lab.exec(['sh', script, ...args]);
const check = (lab: Fabric, ...args: string[]) => routes(lab, '--check', ...args, ...IFACES);
const lines = (text: string) => text.split('\n').filter((l) => l !== '');

/** Everything the script could change. */
const kernelState = (lab: Fabric) =>
  lab.exec([
    'sh',
    '-c',
    'ip -4 rule show; ip -4 route show table all; ip -4 neigh show; for f in /proc/sys/net/ipv4/conf/ib*/*; do printf "%s=%s\\n" "$f" "$(cat "$f" 2>/dev/null)"; done; ls -la /run/ibfleet 2>&1',
  ]).stdout;

/** What status says about the NICs of this namespace: the real probe, parsed, assessed (ibfleet's files and RDMA left out: not a NIC's). */
function statusReasons(lab: Fabric): string[] {
  const probe = lab.exec(['sh', '-c', renderProbeScript(host, seeds)]);
  const finding = assessStatus(host, seeds, playbook, readProbe(probe.stdout));
  // The note that no systemd runs here (a network namespace of the test's) is said, not drift.
  return finding.reasons.filter((r) => !r.includes('/etc/') && !/RDMA|rdma/.test(r) && r !== NO_SYSTEMD_NOTE);
}

describe.runIf(CAN_RUN)('ibfleet-routes --check, for real in a network namespace', () => {
  it('before a deploy: exit 1, every way each NIC differs — exactly the reasons status gives — and nothing changed', () => {
    const lab = labFor(host);
    const before = kernelState(lab);
    const result = check(lab);
    expect(result.status, result.stderr).toBe(1);
    expect(result.stderr).toBe('');
    expect(lines(result.stdout)).toEqual(
      expect.arrayContaining([
        'ib0: table 941 is empty (missing table route)',
        'ib1: rule from 172.16.34.2 is missing',
        'ib1: main-table route to 172.16.0.0/16 is back',
        'ib1: rp_filter is 0, want 2',
      ]),
    );
    expect(lines(result.stdout).sort()).toEqual(statusReasons(lab).sort());
    expect(kernelState(lab)).toBe(before);
  });

  it('after a run: exit 0 and silent; a second check the same', () => {
    const lab = labFor(host);
    expect(routes(lab).status).toBe(0);
    for (let i = 0; i < 2; i++) expect(check(lab)).toMatchObject({ status: 0, stdout: '', stderr: '' });
    expect(statusReasons(lab)).toEqual([]);
  });

  it.each([
    ['a rule deleted', 'ip -4 rule del from 172.16.34.2 lookup 942', ['ib1: rule from 172.16.34.2 is missing']],
    [
      'a duplicate rule',
      'ip -4 rule add from 172.16.34.2 lookup 942 priority 500',
      ['ib1: 2 duplicate rules from 172.16.34.2 (500, 942)'],
    ],
    [
      'a rule at another priority',
      'ip -4 rule del from 172.16.34.2 lookup 942 && ip -4 rule add from 172.16.34.2 lookup 942 priority 600',
      ['ib1: rules for 172.16.34.2 / table 942 are 600: from 172.16.34.2 lookup 942'],
    ],
    [
      'a table route deleted',
      'ip -4 route flush table 941',
      [
        'ib0: table 941 is empty (missing table route)',
        'ib0: traffic from 172.16.34.1 leaves through nowhere — RTNETLINK answers: Network is unreachable',
      ],
    ],
    [
      'a foreign route in a table',
      'ip -4 route add 10.9.0.0/16 dev ib1 table 942',
      [
        'ib1: table 942 holds 10.9.0.0/16 dev ib1 scope link; 172.16.0.0/16 dev ib1 proto kernel scope link src 172.16.34.2',
      ],
    ],
    [
      'a main-table route back',
      'ip -4 route add 172.16.0.0/16 dev ib0 proto kernel scope link src 172.16.34.1',
      ['ib0: main-table route to 172.16.0.0/16 is back'],
    ],
    ['a sysctl changed', 'echo 0 >/proc/sys/net/ipv4/conf/ib1/arp_ignore', ['ib1: arp_ignore is 0, want 2']],
    [
      "a site rule ahead of ibfleet's",
      'ip -4 rule add priority 100 to 172.16.0.0/16 lookup 100 && ip -4 route add 172.16.0.0/16 dev ib1 table 100',
      [
        'ib0: traffic from 172.16.34.1 leaves through ib1 (table 100)',
        'ib1: traffic from 172.16.34.2 leaves through ib1 (table 100)',
      ],
    ],
  ])('%s: named, as status names it, and nothing changed', (_, breakIt, expected) => {
    const lab = labFor(host);
    expect(routes(lab).status).toBe(0);
    expect(lab.exec(['sh', '-c', breakIt]).status).toBe(0);
    const before = kernelState(lab);
    const result = check(lab);
    expect(result.status).toBe(1);
    const found = lines(result.stdout);
    for (const line of expected)
      expect(
        found.some((l) => l.startsWith(line)),
        `${line} in ${result.stdout}`,
      ).toBe(true);
    expect(found.sort()).toEqual(statusReasons(lab).sort());
    expect(kernelState(lab)).toBe(before);
  });

  it.each([
    ['missing', { missing: ['ib1'] }, 'interface ib1 (NIC 2) not found; the host has ib0'],
    [
      'without its address',
      { unaddressed: ['ib1'] },
      'ib1 carries no IPv4 address, but the convention gives NIC 2 of host 34 172.16.34.2/16',
    ],
  ] as const)('a NIC %s: said as status says it, with the rest of that NIC', (_, options, expected) => {
    const lab = labFor(host, { ...options });
    const result = check(lab);
    expect(result.status).toBe(1);
    expect(lines(result.stdout)).toContain(expected);
    expect(lines(result.stdout).sort()).toEqual(statusReasons(lab).sort());
  });

  it('a NIC down: said as status says it', () => {
    const lab = labFor(host);
    lab.ip('link', 'set', 'ib1', 'down');
    expect(lines(check(lab).stdout)).toContain('ib1 is down (it carries 172.16.34.2, but the link is not up)');
    expect(lines(check(lab).stdout).sort()).toEqual(statusReasons(lab).sort());
  });

  it('--preflight asks only whether each NIC is there, up, with its address: 0 on a host never deployed, 1 with the reason otherwise', () => {
    const lab = labFor(host);
    expect(routes(lab, '--preflight', ...IFACES)).toMatchObject({ status: 0, stdout: '' });
    lab.ip('link', 'set', 'ib1', 'down');
    const before = kernelState(lab);
    expect(routes(lab, '--preflight', ...IFACES)).toMatchObject({
      status: 1,
      stdout: 'ib1 is down (it carries 172.16.34.2, but the link is not up)\n',
    });
    expect(kernelState(lab)).toBe(before);
  });

  it('--snapshot changes nothing and prints a script that puts back the rules, tables, main routes, sysctls and files a run changed', () => {
    const lab = labFor(host);
    // A hand-made state: a rule at another priority, a foreign route in a table, odd sysctls.
    expect(
      lab.exec([
        'sh',
        '-c',
        'ip -4 rule add from 172.16.34.2 lookup 942 priority 500 && ip -4 route add 10.9.0.0/16 dev ib1 table 942 && echo 1 >/proc/sys/net/ipv4/conf/ib0/rp_filter',
      ]).status,
    ).toBe(0);
    const files = join(workDir, 'snap');
    const kept = join(files, 'kept.conf');
    lab.exec(['sh', '-c', `mkdir -p ${files} && printf 'old\\n' >${kept} && chmod 640 ${kept}`]);
    const added = join(files, 'new/added.conf');
    const before = kernelState(lab);
    const snapshot = routes(lab, '--snapshot', kept, added, `${files}/new/`);
    expect(snapshot.status, snapshot.stderr).toBe(0);
    expect(kernelState(lab)).toBe(before);
    // A run changes everything; files are written as a change would.
    expect(routes(lab).status).toBe(0);
    lab.exec([
      'sh',
      '-c',
      `printf 'new\\n' >${kept} && chmod 644 ${kept} && mkdir -p ${files}/new && echo x >${added}`,
    ]);
    expect(kernelState(lab)).not.toBe(before);
    const restored = lab.exec(['sh', '-c', snapshot.stdout]);
    expect(restored.status, restored.stdout + restored.stderr).toBe(0);
    expect(kernelState(lab)).toBe(before);
    expect(lab.exec(['sh', '-c', `cat ${kept}; stat -c %a ${kept}; ls ${files}`]).stdout).toBe('old\n640\nkept.conf\n');
  });

  it('an unknown option: exit 2, nothing changed', () => {
    const lab = labFor(host);
    const result = routes(lab, '--chek');
    expect(result.status).toBe(2);
    expect(result.stderr).toContain(
      'unknown option --chek (known: --up-only, --quiet, --check, --preflight, --snapshot)',
    );
  });
});
