/**
 * Two admins, or a retry while the first run still works: runs that meet on a host queue on its
 * lock. The built CLI, the real ssh2 transport, real sshd in lab hosts, real flock; kernel state
 * read back from inside the hosts.
 */
import { describe, expect, it } from 'vitest';
import { labExec } from '../../src/lab/index.js';
import { LOCK_DIR, LOCK_PATH } from '../../src/script/paths.js';
import { HOOK_PATHS } from '../../src/steps/persist/paths.js';
import { ibfleet, json, statuses } from '../helpers/cli.js';
import { holdHostLock, lockTaken, runsQueued } from '../helpers/host-lock.js';
import { IS_ROOT, noteIfNotRoot, testLab, useLab } from '../lab/helpers.js';

const LAB = testLab('e2e-concurrent');

noteIfNotRoot('test/e2e/concurrent.test.ts (deploys that meet on a host queue on its lock)');

describe.skipIf(!IS_ROOT)('concurrent runs queue on the host lock (needs root)', () => {
  const lab = useLab({
    name: LAB.name,
    mgmtSubnet: LAB.mgmtSubnet,
    hosts: [16, 34],
    managers: { 16: 'networkmanager', 34: 'netplan' },
  });
  const sh = async (id: number, script: string) => (await labExec(LAB.name, id, ['sh', '-c', script])).stdout;
  const run = (...args: string[]) => ibfleet(['-i', lab().inventoryPath, ...args]);
  it('two deploys started together both exit 0: one changes each host, the other waits, probes again and finds it unchanged; one rule per address, hooks intact', async () => {
    // Both runs start while the lock is held, so both must wait — and then one waits for the other.
    const holder = await holdHostLock(LAB.name, 16);
    const runs = Promise.all([run('deploy', '--hosts', 'all'), run('deploy', '--hosts', 'all', '--json')]);
    await runsQueued(LAB.name, 16, 2).finally(holder.release);
    const [a, b] = await runs;
    await holder.done;
    expect([a.code, b.code], `${a.stderr}\n${b.stderr}`).toEqual([0, 0]);

    // The plain run said it was waiting, on the host whose lock was held.
    expect(a.stdout).toContain('[16 cpuserver16] waiting for another ibfleet run');
    const plainStatus = (id: number) =>
      (new RegExp(`^\\[${id} \\S+\\] (changed|unchanged) `, 'm').exec(a.stdout) ?? [])[1];
    const jsonStatus = statuses(json(b));
    for (const id of [16, 34])
      expect([plainStatus(id), jsonStatus[id]].sort(), `host ${id}`).toEqual(['changed', 'unchanged']);

    for (const h of lab().hosts) {
      const rules = await sh(h.id, 'ip -4 rule show');
      for (const nic of h.nics)
        expect(
          rules.split('\n').filter((l) => l.includes(`from ${nic.address} lookup`)),
          `host ${h.id} ${nic.iface}`,
        ).toHaveLength(1);
    }
    expect(await sh(16, `stat -c '%a %U' ${HOOK_PATHS.networkmanager}`)).toBe('755 root\n');
    expect(await sh(34, `stat -c '%a %U' ${HOOK_PATHS.netplan}`)).toBe('755 root\n');
    expect((await run('status')).code).toBe(0);
  });

  it('a rollback and a deploy started together both succeed, one after the other: the host ends fully deployed or fully rolled back', async () => {
    await sh(34, 'ip -4 rule del from 172.16.34.2 lookup 942');
    const holder = await holdHostLock(LAB.name, 34);
    const runs = Promise.all([run('deploy', '--hosts', '34', '--json'), run('rollback', '--hosts', '34', '--json')]);
    await runsQueued(LAB.name, 34, 2).finally(holder.release);
    const [deploy, rollback] = await runs;
    await holder.done;
    expect([deploy.code, rollback.code], `${deploy.stderr}\n${rollback.stderr}`).toEqual([0, 0]);
    // Whichever took the lock first, the other found something to do after it.
    expect([statuses(json(deploy))[34], statuses(json(rollback))[34]]).toEqual(['changed', 'changed']);
    const deployed = (await run('status', '--hosts', '34')).code === 0;
    const rules = await sh(34, 'ip -4 rule show');
    if (deployed)
      for (const address of ['172.16.34.1', '172.16.34.2'])
        expect(rules.split('\n').filter((l) => l.includes(`from ${address} lookup`))).toHaveLength(1);
    else {
      expect(rules).not.toMatch(/lookup 94[12]/);
      expect(await sh(34, `test -e ${HOOK_PATHS.netplan} || echo gone`)).toBe('gone\n');
    }
  });

  it('a lock held past --timeout fails that host clearly, naming the lock; status and dry runs take no lock', async () => {
    // Held until killed: a run that queued behind it would wait out its whole --timeout and fail.
    const pidFile = '/run/ibfleet-test-holder.pid';
    const holder = labExec(LAB.name, 16, [
      'sh',
      '-c',
      `mkdir -p -m 0700 ${LOCK_DIR}; exec 9>>${LOCK_PATH}; flock 9; echo $$ >${pidFile}; exec sleep 600`,
    ]);
    await lockTaken(LAB.name, 16);
    try {
      const result = await run('deploy', '--hosts', 'all', '--timeout', '5', '--json');
      expect(result.code).toBe(1);
      const doc = json(result);
      const host16 = doc.hosts.find((h) => h.id === 16)!;
      expect(host16.status).toBe('failed');
      expect(host16.error).toContain(
        `wait: ibfleet: the host lock ${LOCK_PATH} is held by a process that is not an ibfleet run`,
      );
      expect(host16.error).toMatch(/waited [1-3] s for it \(--timeout\); nothing was changed$/);
      expect(['changed', 'unchanged']).toContain(doc.hosts.find((h) => h.id === 34)!.status);
      // Read-only runs do not queue behind a change: they answer while the lock is held.
      expect(['ok', 'drift']).toContain(statuses(json(await run('status', '--hosts', '16', '--json')))[16]);
      expect(['planned', 'unchanged']).toContain(
        statuses(json(await run('deploy', '--hosts', '16', '--dry-run', '--json')))[16],
      );
    } finally {
      await sh(16, `kill "$(cat ${pidFile})"; rm -f ${pidFile}`);
      await holder;
    }
  });
});
