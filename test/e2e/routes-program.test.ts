/**
 * The routing program and its data on real lab hosts (NetworkManager 16, netplan 34), through the
 * real ssh2 transport: every host runs the same bytes — the repository's host/ibfleet-routes — with
 * its own short routes.conf; a host that has the program receives only data that changed; a host
 * an earlier ibfleet deployed (its per-host script, no data) upgrades with one deploy and rolls
 * back clean; data the program cannot take changes nothing (exit 2).
 */
import { createHash } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { labExec } from '../../src/lab/index.js';
import { ROUTES_PROGRAM } from '../../src/script/routes-program.js';
import { ibfleet, json, statuses, type JsonRun } from '../helpers/cli.js';
import { IS_ROOT, noteIfNotRoot, testLab, useLab } from '../lab/helpers.js';

const LAB = testLab('e2e-routes-program');
const HOSTS = [16, 34];
const PROGRAM = '/etc/ibfleet/ibfleet-routes';
const DATA = '/etc/ibfleet/routes.conf';
/** What ibfleet 0.1.0 installed on memserver34 before the program was one file: its per-host script. */
const PER_HOST_SCRIPT = readFileSync(
  new URL('../fixtures/ibfleet-routes-per-host-memserver34', import.meta.url),
  'utf8',
);

noteIfNotRoot('test/e2e/routes-program.test.ts (the routing program and its data on a lab)');

describe.skipIf(!IS_ROOT)('one routing program, per-host data (needs root)', () => {
  const lab = useLab({ name: LAB.name, mgmtSubnet: LAB.mgmtSubnet, hosts: HOSTS });
  const work = mkdtempSync(join(tmpdir(), 'ibfleet-e2e-routes-program-'));
  afterAll(() => rmSync(work, { recursive: true, force: true }));
  const run = (...args: string[]) => ibfleet(['-i', lab().inventoryPath, '--log', join(work, 'run.log'), ...args]);
  const sh = async (id: number, script: string) => {
    const r = await labExec(LAB.name, id, ['sh', '-c', script]);
    return { code: r.code, out: r.stdout.trim(), err: r.stderr.trim() };
  };
  const rules = async (id: number) => (await sh(id, 'ip -4 rule show')).out;
  /** The files a deploy wrote or replaced on host `id`. */
  const written = (doc: JsonRun, id: number) =>
    (doc.hosts.find((h) => h.id === id)?.changes ?? []).filter((c) => c.subject.startsWith('/')).map((c) => c.subject);

  it('every host gets the same program, the repository file, and its own data; both pass their own --check', async () => {
    const deployed = await run('deploy', '--hosts', 'all', '--json');
    expect(deployed.code, deployed.stdout).toBe(0);
    const sum = createHash('sha256').update(ROUTES_PROGRAM).digest('hex');
    for (const id of HOSTS) {
      expect((await sh(id, `sha256sum ${PROGRAM} | cut -d' ' -f1`)).out).toBe(sum);
      expect((await sh(id, `grep -x 'host ${id}' ${DATA}`)).out).toBe(`host ${id}`);
      expect(await sh(id, `${PROGRAM} --check`)).toEqual({ code: 0, out: '', err: '' });
    }
  });

  it('a host that has the program receives only the data that changed', async () => {
    await sh(34, `sed -i 's/^main-routes remove$/main-routes keep/' ${DATA}`);
    const doc = json<JsonRun>(await run('deploy', '--hosts', 'all', '--json'));
    expect(statuses(doc)).toEqual({ 16: 'unchanged', 34: 'changed' });
    expect(written(doc, 34)).toEqual([DATA]);
  });

  it('data it cannot take: exit 2 with the line and why, and the routing is left as it was', async () => {
    const before = await rules(34);
    await sh(34, `cp ${DATA} /root/routes.conf.good && sed -i 's/^nic ib1 /nic ib1;reboot /' ${DATA}`);
    await sh(34, 'ip -4 rule del from 172.16.34.2 lookup 942');
    const result = await sh(34, PROGRAM);
    expect(result.code).toBe(2);
    expect(result.err).toMatch(/routes\.conf line \d+: it holds characters no setting has; nothing changed/);
    expect(await rules(34)).toBe(before.replace(/\n942:\tfrom 172\.16\.34\.2 lookup 942/, ''));
    await sh(34, `mv /root/routes.conf.good ${DATA} && ${PROGRAM} --quiet`);
    expect(await rules(34)).toBe(before);
  });

  it('a host an earlier ibfleet deployed (its per-host script, no data) upgrades with one deploy, and rolls back clean', async () => {
    await sh(34, `rm -f ${DATA}`);
    await labExec(LAB.name, 34, ['sh', '-c', `cat >${PROGRAM} && chmod 0755 ${PROGRAM}`], { input: PER_HOST_SCRIPT });
    // The earlier script still does its work where a hook or the timer runs it meanwhile.
    expect((await sh(34, `${PROGRAM} --quiet; echo $?`)).out).toBe('0');
    const status = json<JsonRun>(await run('status', '--hosts', '34', '--json'));
    expect(status.hosts[0]!.reasons).toEqual(
      expect.arrayContaining([
        `${DATA} is missing`,
        `${PROGRAM} is the per-host version ibfleet 0.1.0 generated for host 34 (memserver34); this ibfleet's is the same on every host, with the host's part in its data: deploy replaces it (not a hand edit)`,
      ]),
    );
    const upgraded = json<JsonRun>(await run('deploy', '--hosts', '34', '--json'));
    expect(upgraded.hosts[0]!.status).toBe('changed');
    expect(written(upgraded, 34).sort()).toEqual([PROGRAM, DATA].sort());
    expect(statuses(json<JsonRun>(await run('status', '--json')))).toEqual({ 16: 'ok', 34: 'ok' });
    expect(await sh(34, `${PROGRAM} --check`)).toEqual({ code: 0, out: '', err: '' });

    const rolled = await run('rollback', '--hosts', 'all', '--json');
    expect(rolled.code, rolled.stdout).toBe(0);
    for (const id of HOSTS) {
      expect((await sh(id, 'ls -A /etc/ibfleet 2>&1')).out).toMatch(/No such file or directory/);
      expect(await rules(id)).not.toMatch(/lookup 94[12]/);
    }
  });
});
