import { readFileSync } from 'node:fs';
import { addIpLines } from '../helpers/probe-edit.js';
import { describe, expect, it } from 'vitest';
import { loadInventory } from '../../src/inventory/load.js';
import { loadPlaybook } from '../../src/playbook/playbook.js';
import { AFTER_MARK, LOCKED_EXIT } from '../../src/render/apply-script.js';
import { LOCK_TAKEN_MARK, LOCK_WAIT_MARK } from '../../src/render/host-lock.js';
import { ROUTES_PROGRAM } from '../../src/script/routes-program.js';
import type { HostResult, RunEvents, Stage } from '../../src/vocabulary.js';
import { runHosts, timeLimitText } from '../../src/runner/fanout.js';
import { deployHost, rollbackHost, statusHost } from '../../src/runner/host-workflows.js';
import { ConnectError, OUTPUT_KEEP } from '../../src/runner/transport.js';
import { deployedProbe, fakeTransport, fixture, ok, stateful, type FakeHost } from '../helpers/fake-transport.js';

const playbook = loadPlaybook(
  readFileSync(new URL('../../playbooks/dual-ib-routing.yaml', import.meta.url), 'utf8'),
  'dual-ib-routing.yaml',
);
const fleet = loadInventory(
  'fabric: { subnet: 172.16.0.0/16 }\nhosts:\n' +
    [34, 35, 36, 37]
      .map((id) => `  ${id}: { name: ${id === 34 ? 'memserver34' : `node${id}`}, address: 198.18.99.${id} }`)
      .join('\n') +
    '\n',
  'test.yaml',
);
const host34 = fleet.hosts[0]!;
const boot = fixture('netplan-boot.txt');
const deployed = deployedProbe(host34, fleet, playbook, 'netplan');

function recorder() {
  const stages = new Map<number, Stage[]>();
  const done: HostResult[] = [];
  /** What each host's run gave the run log: label and text. */
  const outputs = new Map<number, { label: string; text: string }[]>();
  const events: RunEvents = {
    onStage: (h, s) => stages.set(h.id, [...(stages.get(h.id) ?? []), s]),
    onHostDone: (r) => done.push(r),
    onOutput: (h, label, text) => outputs.set(h.id, [...(outputs.get(h.id) ?? []), { label, text }]),
  };
  return { events, stages, done, outputs };
}

async function run(
  hosts: Record<number, FakeHost>,
  work: 'deploy' | 'dry-run' | 'status' | 'rollback',
  opts: { concurrency?: number; timeoutMs?: number; interrupt?: AbortSignal; only?: number[] } = {},
) {
  const transport = fakeTransport(hosts);
  const rec = recorder();
  const ctx = { fleet, playbook, transport };
  const fn =
    work === 'status'
      ? statusHost(ctx)
      : work === 'rollback'
        ? rollbackHost(ctx)
        : deployHost(ctx, { dryRun: work === 'dry-run' });
  const selected = fleet.hosts.filter((h) => (opts.only ?? [34]).includes(h.id));
  const results = await runHosts(
    selected,
    {
      concurrency: opts.concurrency ?? 32,
      timeoutMs: opts.timeoutMs ?? 5000,
      interrupt: opts.interrupt ?? new AbortController().signal,
      events: rec.events,
    },
    fn,
  );
  return { results, transport, rec };
}

describe('deploy on one host (fake transport)', () => {
  it('from the boot state: probes, plans, and pushes and applies in the shell that probed (one channel in all), and verifies the state left behind', async () => {
    const { results, transport, rec } = await run({ 34: { respond: stateful(boot, deployed) } }, 'deploy');
    const r = results[0]!;
    expect(r.status).toBe('changed');
    expect(r.manager).toBe('netplan');
    expect(r.os).toBe('Ubuntu 18.04.6 LTS');
    expect(r.reasons).toContain('ib1: rule 942: from 172.16.34.2 lookup 942');
    expect(r.reasons).toContain('install /etc/networkd-dispatcher/routable.d/50-ibfleet-routes (755)');
    expect(r.channels).toBe(1);
    expect(rec.stages.get(34)).toEqual(['connect', 'probe', 'plan', 'push', 'apply', 'verify']);
    const [probe, apply] = transport.log.scripts.get(34)! as [string, string];
    // The probe takes the host lock first; the change runs under it, in the same shell.
    expect(probe).toContain('flock -n 9');
    expect(probe).toContain('@@ibfleet %s');
    // Staged next to its directory (the hook one level up, out of the dispatcher's sight), then renamed.
    expect(apply).toContain("printf '%s' '#!/bin/sh");
    expect(apply).toContain("' >/etc/ibfleet/.ibfleet-routes.ibfleet-new.$$ || status=1");
    expect(apply).toContain("' >/etc/networkd-dispatcher/.routable.d.50-ibfleet-routes.ibfleet-new.$$ || status=1");
    // Every staged file renamed by one call (one process on a host with perl; host/sent/change.sh).
    expect(apply).toContain(
      ' /etc/networkd-dispatcher/.routable.d.50-ibfleet-routes.ibfleet-new.$$ /etc/networkd-dispatcher/routable.d/50-ibfleet-routes',
    );
    expect(apply.match(/^\[ "\$status" -ne 0 \] \|\| rename_staged /gm)).toHaveLength(1);
  });

  it('changes nothing when everything is in place: one probe, reported unchanged, and its shell gets no second script', async () => {
    const { results, transport } = await run({ 34: { respond: () => ok(deployed) } }, 'deploy');
    expect(results[0]).toMatchObject({ status: 'unchanged', reasons: [], channels: 1 });
    expect(transport.log.scripts.get(34)).toHaveLength(1);
  });

  it('--dry-run reports the plan and the exact script without running it', async () => {
    const { results, transport } = await run({ 34: { respond: () => ok(boot) } }, 'dry-run');
    expect(results[0]!.status).toBe('planned');
    expect(results[0]!.planText).toContain('/etc/ibfleet/ibfleet-routes || status=$?');
    expect(transport.log.scripts.get(34)).toHaveLength(1);
  });

  it('gives the run log the script with each file it writes apart: the routing program as its own entry, once', async () => {
    for (const work of ['deploy', 'dry-run'] as const) {
      const { rec } = await run({ 34: { respond: stateful(boot, deployed) } }, work);
      const what = work === 'deploy' ? 'apply' : 'dry run';
      const entries = rec.outputs.get(34)!;
      const script = entries.find((e) => e.label.startsWith(`${what} script (`))!;
      expect(script.label).toContain('the content of each file it writes apart');
      expect(script.text).toContain(`printf '%s' [the content of /etc/ibfleet/ibfleet-routes, shown apart below] >`);
      const program = entries.filter(
        (e) => e.label === `${what} file /etc/ibfleet/ibfleet-routes (0755), as the script writes it`,
      );
      expect(program.map((e) => e.text)).toEqual([ROUTES_PROGRAM]);
      expect(script.text).not.toContain(ROUTES_PROGRAM.split('\n')[1]);
    }
  });

  it('fails at verify when the host does not end up as planned', async () => {
    const { results } = await run({ 34: { respond: stateful(boot, boot) } }, 'deploy');
    expect(results[0]).toMatchObject({ status: 'failed', error: { stage: 'verify' } });
    expect(results[0]!.error!.message).toMatch(/verification failed: .*rule from 172.16.34.1 is missing/);
  });

  it('a change that does not verify is rolled back in a channel of its own, and the message says so', async () => {
    // Everything applied, but a site rule still sends NIC 1's traffic out of mgmt0.
    const astray = deployed.replace(/^(172\.16\.1\.1 from 172\.16\.34\.1 dev) ib0 table 941 /m, '$1 mgmt0 ');
    expect(astray).not.toBe(deployed);
    const respond = (script: string) =>
      script.includes('ibfleet restore after a failed verification')
        ? ok(`ibfleet: restored\n${AFTER_MARK}\n${boot}`)
        : script.includes(AFTER_MARK)
          ? ok(`ibfleet: created /etc/ibfleet\n${AFTER_MARK}\n${astray}`)
          : ok(boot);
    const { results, transport } = await run({ 34: { respond } }, 'deploy');
    expect(results[0]).toMatchObject({ status: 'failed', error: { stage: 'verify' } });
    expect(results[0]!.error!.message).toMatch(
      /^verification failed: ib0: traffic from 172\.16\.34\.1 leaves through mgmt0.*; rolled back: the host is as it was before this deploy/,
    );
    expect(transport.log.scripts.get(34)).toHaveLength(3);
    const restore = transport.log.scripts.get(34)![2]!;
    expect(restore).toContain('rmdir /etc/ibfleet');
    expect(restore).toContain('ip -4 route append 172.16.0.0/16 dev ib0 proto kernel scope link src 172.16.34.1');
  });

  it('a restore that leaves a difference names it', async () => {
    const astray = deployed.replace(/^(172\.16\.1\.1 from 172\.16\.34\.1 dev) ib0 table 941 /m, '$1 mgmt0 ');
    const respond = (script: string) =>
      script.includes('ibfleet restore after a failed verification')
        ? ok(`${AFTER_MARK}\n${deployed}`)
        : script.includes(AFTER_MARK)
          ? ok(`${AFTER_MARK}\n${astray}`)
          : ok(boot);
    const { results } = await run({ 34: { respond } }, 'deploy');
    expect(results[0]!.error!.message).toMatch(
      /; rolled back, but these still differ from before: source rules: 941: from 172\.16\.34\.1 lookup 941; 942: from 172\.16\.34\.2 lookup 942, before \(none\)/,
    );
  });

  it('a change cut off from the controller (the connection lost) is read again on a new connection once it has ended', async () => {
    const respond = (script: string) =>
      script.includes('cut off from the controller, to end')
        ? ok(`${AFTER_MARK}\n${deployed}`)
        : script.includes(AFTER_MARK)
          ? { code: null, signal: undefined, stdout: 'ibfleet: wrote /etc/ibfleet/ibfleet-routes\n', stderr: '' }
          : ok(boot);
    const { results, transport } = await run({ 34: { respond } }, 'deploy');
    expect(results[0]).toMatchObject({ status: 'changed', connections: 2 });
    expect(results[0]!.reasons[0]).toBe(
      'the connection was lost during the change; the host finished the change on its own (checked on a new connection)',
    );
    const settle = transport.log.scripts.get(34)![0]!;
    const runId = /^# ibfleet: wait for change ([0-9a-f]{16}),/m.exec(settle)![1];
    // host/sent/settle.sh's wait, for this change's id (test/root/render/ runs it for real).
    expect(settle).toMatch(new RegExp(`^settle_wait ${runId} \\d+$`, 'm'));
  });

  it('a probe drowned in output fails, and no change is sent', async () => {
    // A start-up file that prints more than ibfleet reads, before the probe's own output.
    const respond = () => ok(`${'noise\n'.repeat(OUTPUT_KEEP / 6 + 1)}${boot}`);
    const { results, transport } = await run({ 34: { respond } }, 'deploy');
    expect(results[0]).toMatchObject({ status: 'failed', error: { stage: 'probe' } });
    expect(results[0]!.error!.message).toMatch(/^the host printed more than 1 MiB on stdout during the probe/);
    expect(transport.log.scripts.get(34)).toHaveLength(1);
  });

  it('reports another run holding the host lock past the time left, and sends no change', async () => {
    const held =
      'ibfleet: the host lock /run/ibfleet/lock is held by another ibfleet deploy (its shell is pid 4242); waited 3 s for it (--timeout); nothing was changed';
    const locked: FakeHost = {
      respond: () => ({ code: LOCKED_EXIT, signal: undefined, stdout: `${LOCK_WAIT_MARK}\n`, stderr: `${held}\n` }),
    };
    const { results, transport, rec } = await run({ 34: locked }, 'deploy');
    expect(results[0]).toMatchObject({
      status: 'failed',
      error: { stage: 'wait', message: held, exitCode: LOCKED_EXIT },
    });
    expect(rec.stages.get(34)).toEqual(['connect', 'probe', 'wait']);
    expect(transport.log.scripts.get(34)).toHaveLength(1);
  });

  it('a run that waited for the lock and got it probes and changes in the same shell', async () => {
    const waited: FakeHost = {
      respond: (s) =>
        s.includes(AFTER_MARK)
          ? ok(`ibfleet-routes: configured\n${AFTER_MARK}\n${deployed}`)
          : ok(`${LOCK_WAIT_MARK}\n${LOCK_TAKEN_MARK}\n${boot}`),
    };
    const { results, rec } = await run({ 34: waited }, 'deploy');
    expect(results[0]).toMatchObject({ status: 'changed', channels: 1 });
    expect(rec.stages.get(34)).toEqual(['connect', 'probe', 'wait', 'probe', 'plan', 'push', 'apply', 'verify']);
  });

  it('refuses a host whose interface is missing, naming what it has', async () => {
    const noIb1 = boot.replace(/^4: ib1@if6.*$/m, '').replace(/^4: ib1 .*$/m, '');
    const { results, transport } = await run({ 34: { respond: () => ok(noIb1) } }, 'deploy');
    expect(results[0]).toMatchObject({ status: 'failed', error: { stage: 'plan' } });
    expect(results[0]!.error!.message).toMatch(/interface ib1 \(NIC 2\) not found; the host has mgmt0, ib0/);
    expect(transport.log.scripts.get(34)).toHaveLength(1);
  });

  it('refuses a fabric NIC whose link is down although it carries its address', async () => {
    const down = boot.replace(/^(4: ib1@if6: <BROADCAST,MULTICAST),UP,LOWER_UP> (.*) state UP /m, '$1> $2 state DOWN ');
    expect(down).not.toBe(boot);
    const { results } = await run({ 34: { respond: () => ok(down) } }, 'deploy');
    expect(results[0]).toMatchObject({ status: 'failed', error: { stage: 'plan' } });
    expect(results[0]!.error!.message).toMatch(/ib1 is down \(it carries 172\.16\.34\.2, but the link is not up\)/);
  });

  it('refuses an address that does not follow the convention', async () => {
    const wrong = boot.replace('inet 172.16.34.2/16', 'inet 172.16.34.9/16');
    const { results } = await run({ 34: { respond: () => ok(wrong) } }, 'deploy');
    expect(results[0]!.error!.message).toMatch(
      /ib1 carries 172.16.34.9\/16, but the convention gives NIC 2 of host 34 172.16.34.2\/16/,
    );
  });

  it('reports a probe cut short (its shell ended before the end marker) as a failure with the output tail', async () => {
    const { results } = await run(
      {
        34: {
          respond: () => ({ code: 127, signal: undefined, stdout: '@@ibfleet probe 1\n', stderr: 'sh: ip: not found' }),
        },
      },
      'deploy',
    );
    expect(results[0]).toMatchObject({ status: 'failed', error: { stage: 'probe', exitCode: 127 } });
    expect(results[0]!.error!.message).toMatch(/ip: not found/);
  });

  it('a probe that never says its end marker is cut off by --timeout, its shell still waiting: no change is sent', async () => {
    const { results, transport } = await run(
      { 34: { respond: () => ok(boot.replace('@@ibfleet end\n', '')) } },
      'deploy',
      { timeoutMs: 300 },
    );
    expect(results[0]).toMatchObject({
      status: 'failed',
      error: { stage: 'probe', message: 'timed out after 0.3 s during probe' },
    });
    expect(transport.log.scripts.get(34)).toHaveLength(1);
  });
});

describe('fan-out', () => {
  const good: FakeHost = { respond: () => ok(deployed) };

  it('one unreachable host and one auth failure do not stop the others', async () => {
    const { results } = await run(
      {
        34: { respond: () => ok(deployed) },
        36: { connectError: new ConnectError('authentication as root failed', false), respond: () => ok('') },
      },
      'status',
      { only: [34, 35, 36] },
    );
    expect(results.map((r) => [r.host.id, r.status])).toEqual([
      [34, 'ok'],
      [35, 'unreachable'],
      [36, 'failed'],
    ]);
  });

  it('never runs more hosts at once than --concurrency', async () => {
    const slow: FakeHost = { ...good, connectDelayMs: 20 };
    const { transport } = await run({ 34: slow, 35: slow, 36: slow, 37: slow }, 'status', {
      concurrency: 2,
      only: [34, 35, 36, 37],
    });
    expect(transport.log.maxInFlight).toBe(2);
  });

  it('gives up on a host that exceeds --timeout, naming the stage, without holding up the rest', async () => {
    const { results } = await run(
      { 34: { respond: () => ok(deployed) }, 35: { ...good, connectDelayMs: 10_000 } },
      'status',
      { timeoutMs: 100, only: [34, 35] },
    );
    expect(results[0]!.status).toBe('ok');
    expect(results[1]).toMatchObject({
      status: 'unreachable',
      error: { stage: 'connect', message: 'no answer from 198.18.99.35 within 0.1 s (--timeout)' },
    });
  });

  it.each([
    [400, '0.4 s'],
    [60_000, '60 s'],
    [2_500, '2.5 s'],
    [1, '0.001 s'],
    [1.1 * 1000, '1.1 s'],
    [2_147_483_000, '2147483 s'],
  ])('--timeout is said as given: %d ms is %s', (ms, text) => {
    expect(timeLimitText(ms)).toBe(text);
  });

  it('after an interrupt, hosts not yet started are "not run", not failed', async () => {
    const interrupt = new AbortController();
    interrupt.abort();
    const { results } = await run({ 34: good }, 'status', { interrupt: interrupt.signal, only: [34, 35] });
    expect(results.map((r) => [r.status, r.reasons[0], r.error])).toEqual([
      ['not-run', 'not started: interrupted', undefined],
      ['not-run', 'not started: interrupted', undefined],
    ]);
  });
});

describe('status and rollback (fake transport)', () => {
  it('status is ok for a deployed host and lists drift reasons otherwise', async () => {
    expect((await run({ 34: { respond: () => ok(deployed) } }, 'status')).results[0]).toMatchObject({
      status: 'ok',
      reasons: [],
    });
    const drifted = addIpLines(
      deployed.replace(/^942:\tfrom 172.16.34.2 lookup 942$/m, ''),
      '172.16.0.0/16 dev ib0 proto kernel scope link src 172.16.34.1',
    );
    const r = (await run({ 34: { respond: () => ok(drifted) } }, 'status')).results[0]!;
    expect(r.status).toBe('drift');
    expect(r.reasons).toEqual([
      'ib0: main-table route to 172.16.0.0/16 is back',
      'ib1: rule from 172.16.34.2 is missing',
    ]);
  });

  it('rollback of a host already at boot state changes nothing', async () => {
    const { results, transport } = await run({ 34: { respond: () => ok(boot) } }, 'rollback');
    expect(results[0]).toMatchObject({ status: 'unchanged' });
    expect(transport.log.scripts.get(34)).toHaveLength(1);
  });

  it('rollback of a deployed host runs the rollback script in the shell that probed and verifies the boot state', async () => {
    const { results, transport } = await run({ 34: { respond: stateful(deployed, boot) } }, 'rollback');
    expect(results[0]).toMatchObject({ status: 'changed', channels: 1 });
    expect(transport.log.scripts.get(34)).toHaveLength(2);
    // main_route_back (host/functions/policy-routing.sh), whose definition the script carries.
    expect(transport.log.scripts.get(34)![1]).toContain('main_route_back 172.16.0.0/16 ib0 172.16.34.1');
    expect(transport.log.scripts.get(34)![1]).toContain(
      'ip -4 route append "$1" dev "$2" proto kernel scope link src "$3"',
    );
  });
});
