/**
 * Fitting the tools HPC sites already run, against one lab host per manager (16 NetworkManager, 34
 * netplan, 40 ifupdown): the routing script's check mode on the host, the NHC check under NHC's
 * calling convention (test/helpers/nhc-harness.sh: NHC is not packaged for Debian), the real
 * prometheus-node-exporter scraped inside a host on its own lab address, and the project
 * `ibfleet export ansible` writes, run with the real ansible-playbook.
 */
import {
  chmodSync,
  copyFileSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { parseDocument } from 'yaml';
import { labExec } from '../../src/lab/index.js';
import { LOCK_PATH, ROUTES_LOCK_PATH } from '../../src/script/paths.js';
import { NO_SYSTEMD_NOTE } from '../../src/steps/persist/systemd.js';
import { ansiblePlaybook, changedOf } from '../helpers/ansible.js';
import { ibfleet, json, statuses } from '../helpers/cli.js';
import { IS_ROOT, noteIfNotRoot, testLab, useLab } from '../lab/helpers.js';

const LAB = testLab('e2e-fit');
const HOSTS = [16, 34, 40];
const ROUTES = '/etc/ibfleet/ibfleet-routes';
const NHC = '/etc/nhc/scripts/ibfleet.nhc';
const TEXTFILE = '/var/lib/prometheus/node-exporter/ibfleet.prom';
const HOOKS = [
  '/etc/NetworkManager/dispatcher.d/50-ibfleet-routes',
  '/etc/networkd-dispatcher/routable.d/50-ibfleet-routes',
  '/etc/network/if-up.d/ibfleet-routes',
];
const REPAIR_EVERY_S = 5;
/** The repair's interval, the lab timer runner's 1 s poll, and slack for a loaded machine. */
const REPAIR_BOUND_MS = (REPAIR_EVERY_S + 1) * 1000 + 6000;

noteIfNotRoot('test/e2e/fit.test.ts (check mode, NHC, node_exporter and Ansible against the lab)');

const work = mkdtempSync(join(tmpdir(), 'ibfleet-e2e-fit-'));
afterAll(() => rmSync(work, { recursive: true, force: true }));
const shipped = readFileSync(new URL('../../playbooks/dual-ib-routing.yaml', import.meta.url), 'utf8');
const withPersist = (name: string, params: string) => {
  const path = join(work, `${name}.yaml`);
  writeFileSync(path, shipped.replace(/^ {2}- persist$/m, `  - persist: ${params}`));
  return path;
};
/** No repair while a test holds drift in place (a repair would race the check); NHC's check installed. */
const QUIET_REPAIR = withPersist('quiet-repair', '{ repairEvery: 3600, monitor: nhc }');
/** Both monitors, and a repair every few seconds. */
const MONITORED = withPersist('monitored', `{ repairEvery: ${REPAIR_EVERY_S}, monitor: [prometheus, nhc] }`);
/** Both monitors, no repair while a test looks (the repair would write the textfile again). */
const MONITORED_QUIET = withPersist('monitored-quiet', '{ repairEvery: 3600, monitor: [prometheus, nhc] }');
/** ansible-playbook runs take ~8 s here, and minutes on a machine others load heavily. */
const ANSIBLE_TIMEOUT_MS = 300_000;

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
/** Polls `done` every 100 ms, at most 60 s. */
async function until(done: () => Promise<boolean>, what: string): Promise<void> {
  const deadline = Date.now() + 60_000;
  while (!(await done())) {
    if (Date.now() > deadline) throw new Error(`${what}: not within 60 s`);
    await sleep(100);
  }
}

describe.skipIf(!IS_ROOT)(
  'fitting the tools HPC sites run: check mode, NHC, node_exporter, Ansible (needs root)',
  () => {
    const lab = useLab({
      name: LAB.name,
      mgmtSubnet: LAB.mgmtSubnet,
      hosts: HOSTS,
      managers: { 16: 'networkmanager', 34: 'netplan', 40: 'ifupdown' },
    });
    const run = (...args: string[]) => ibfleet(['-i', lab().inventoryPath, '--no-log', ...args]);
    const exec = (id: number, script: string, input?: string) =>
      labExec(lab().name, id, ['sh', '-c', script], input === undefined ? {} : { input });
    const sh = async (id: number, script: string) => (await exec(id, script)).stdout.trim();
    /** The interface carrying NIC n of host `id`. */
    const nic = (id: number, n: number) =>
      `$(ip -o -4 addr show | awk '$4 ~ /^172\\.16\\.${id}\\.${n}\\// { print $2 }')`;
    const statusOf = async (playbook: string) => {
      const doc = json(await run('status', '--playbook', playbook, '--json'));
      // A lab host run without systemd says so in status; that is a note, not a reason --check gives.
      return {
        statuses: statuses(doc),
        reasons: Object.fromEntries(
          doc.hosts.map((h) => [h.id, (h.reasons ?? []).filter((r) => r !== NO_SYSTEMD_NOTE)]),
        ) as Record<number, string[]>,
      };
    };
    const deploy = async (playbook: string) => {
      const result = await run('deploy', '--hosts', 'all', '--playbook', playbook, '--json');
      expect(result.code, result.stdout + result.stderr).toBe(0);
    };
    /** Everything a run of the routing script or the role could change on a host. */
    const hostState = (id: number) =>
      sh(
        id,
        'ip -4 rule show; ip -4 route show table all; for f in /proc/sys/net/ipv4/conf/*/arp_* /proc/sys/net/ipv4/conf/*/rp_filter /proc/sys/net/ipv4/conf/*/accept_local; do printf "%s=%s\\n" "$f" "$(cat "$f")"; done; find /etc /var/lib/prometheus -xdev -printf "%y %p %m %U\\n" 2>/dev/null | sort; find /etc -xdev -type f -print0 | sort -z | xargs -0 sha256sum',
      );
    const harness = readFileSync(new URL('../helpers/nhc-harness.sh', import.meta.url), 'utf8');
    /** NHC's driver, as its calling convention has it, with nhc.conf's line for ibfleet's check. */
    const nhc = (id: number) =>
      exec(
        id,
        'mkdir -p /etc/nhc && echo "* || check_ibfleet_routing" >/etc/nhc/nhc.conf && cat >/run/nhc-harness.sh && bash /run/nhc-harness.sh',
        harness,
      );

    describe("the routing script's --check, and the NHC check that runs it, on every manager", () => {
      it('after a deploy: --check exits 0 saying nothing on every host, and NHC passes', async () => {
        await deploy(QUIET_REPAIR);
        for (const id of HOSTS) {
          expect(await exec(id, `${ROUTES} --check`), `host ${id}`).toMatchObject({ code: 0, stdout: '', stderr: '' });
          expect(await nhc(id), `host ${id}`).toMatchObject({
            code: 0,
            stdout: 'Node Health Check completed successfully.\n',
          });
        }
      });

      it('each kind of drift is named, as status names it, and the check changes nothing; NHC fails through die with the first reason', async () => {
        const breakIt = (id: number) =>
          [
            `ip -4 rule del from 172.16.${id}.2 lookup 942`, // a rule
            'ip -4 route flush table 941', // a table route
            `ip -4 route add 172.16.0.0/16 dev ${nic(id, 2)} metric 500 proto kernel scope link src 172.16.${id}.2`, // a main-table route back
            `echo 0 >/proc/sys/net/ipv4/conf/${nic(id, 2)}/arp_ignore`, // a sysctl
            `for f in ${HOOKS.join(' ')}; do [ ! -f "$f" ] || echo '# edited' >>"$f"; done`, // the hook edited
            'rm /etc/systemd/system/ibfleet-routes-repair.timer', // a file missing
            'chmod 600 /etc/sysctl.d/60-ibfleet-fabric.conf', // a file's mode
            `echo '# edited' >>${NHC}`, // the NHC check edited
          ].join(' && ');
        for (const id of HOSTS) expect((await exec(id, breakIt(id))).code, `breaking host ${id}`).toBe(0);
        const status = await statusOf(QUIET_REPAIR);
        for (const id of HOSTS) {
          const before = await hostState(id);
          const check = await exec(id, `${ROUTES} --check`);
          expect(check.code, `host ${id}`).toBe(1);
          const lines = check.stdout.trim().split('\n');
          expect([...lines].sort(), `host ${id}: --check and status give the same reasons`).toEqual(
            [...status.reasons[id]!].sort(),
          );
          for (const kind of [
            /: rule from 172\.16\.\d+\.2 is missing$/,
            /: table 941 is empty \(missing table route\)$/,
            /: main-table route to 172\.16\.0\.0\/16 is back$/,
            /: arp_ignore is 0, want 2$/,
            /^hook \/etc\/.* was modified \(content differs from the rendered file\)$/,
            /^repair unit \/etc\/systemd\/system\/ibfleet-routes-repair\.timer is missing$/,
            /^\/etc\/sysctl\.d\/60-ibfleet-fabric\.conf has mode 600 owner uid 0, want 644 root$/,
            /^NHC check \/etc\/nhc\/scripts\/ibfleet\.nhc was modified/,
          ]) {
            expect(
              lines.some((l) => kind.test(l)),
              `host ${id}: ${kind} in\n${check.stdout}`,
            ).toBe(true);
          }
          expect(await hostState(id), `host ${id}: nothing changed by the check`).toBe(before);
          const health = await nhc(id);
          expect(health.code, `host ${id}`).toBe(1);
          expect(health.stdout).toBe(
            `ERROR:  nhc:  Health check failed:  check_ibfleet_routing:  ${check.stdout.split('\n')[0]}\n`,
          );
        }
        await deploy(QUIET_REPAIR);
        for (const id of HOSTS)
          expect(await exec(id, `${ROUTES} --check`), `host ${id} after deploy`).toMatchObject({ code: 0, stdout: '' });
      });
    });

    describe('monitor: prometheus, scraped from the real prometheus-node-exporter inside host 34', () => {
      it('ibfleet_nic_ok is 1 after deploy, 0 within the repair bound after ip rule del, 1 again after the repair, and the repairs counter is up by one', async () => {
        const machines = existsSync(TEXTFILE) ? readFileSync(TEXTFILE, 'utf8') : undefined;
        await deploy(MONITORED);
        expect((await statusOf(MONITORED)).statuses).toEqual({ 16: 'ok', 34: 'ok', 40: 'ok' });
        // Each lab host has its own node_exporter directory: the machine's textfile is untouched.
        expect(existsSync(TEXTFILE) ? readFileSync(TEXTFILE, 'utf8') : undefined).toBe(machines);
        const address = LAB.address(34);
        const pid = await sh(
          34,
          `prometheus-node-exporter --web.listen-address=${address}:9100 --collector.disable-defaults --collector.textfile --collector.textfile.directory=/var/lib/prometheus/node-exporter >/run/node-exporter.log 2>&1 & echo $!`,
        );
        expect(pid).toMatch(/^\d+$/);
        try {
          const scrape = async () => {
            for (let i = 0; i < 50; i++) {
              const got = await exec(34, `curl -sf http://${address}:9100/metrics`);
              if (got.code === 0) return got.stdout;
              await sleep(100);
            }
            throw new Error(`node_exporter did not answer: ${await sh(34, 'cat /run/node-exporter.log')}`);
          };
          const sample = (text: string, name: string) => {
            const line = text
              .split('\n')
              .find((l) => l.startsWith(`${name} `) || (l.startsWith(`${name}{`) && l.includes('iface="ib1"')));
            return line === undefined ? undefined : Number(line.split(' ').pop());
          };
          const first = await scrape();
          expect(sample(first, 'ibfleet_nic_ok')).toBe(1);
          expect(first).toMatch(/^ibfleet_nic_ok\{iface="ib0",nic="1"\} 1$/m);
          expect(first).toMatch(/^ibfleet_info\{playbook="dual-ib-routing",version="\d+\.\d+\.\d+"\} 1$/m);
          expect(first).toMatch(/^# TYPE ibfleet_repairs_total counter$/m);
          // promtool (Debian's prometheus) lints the metrics as node_exporter serves them.
          const ours = first
            .split('\n')
            .filter((l) => /^(# (HELP|TYPE) )?ibfleet_/.test(l))
            .join('\n');
          expect(await exec(34, 'promtool check metrics', `${ours}\n`)).toMatchObject({ code: 0 });
          const repairs = sample(first, 'ibfleet_repairs_total')!;

          await sh(34, 'ip -4 rule del from 172.16.34.2 lookup 942');
          const drifted = Date.now();
          let seen = await scrape();
          while (sample(seen, 'ibfleet_nic_ok') !== 0 && Date.now() - drifted < REPAIR_BOUND_MS)
            seen = (await sleep(250), await scrape());
          expect(sample(seen, 'ibfleet_nic_ok'), `ib1 at 0 within ${REPAIR_BOUND_MS} ms`).toBe(0);
          expect(sample(seen, 'ibfleet_repairs_total')).toBe(repairs + 1);
          while (sample(seen, 'ibfleet_nic_ok') !== 1 && Date.now() - drifted < 2 * REPAIR_BOUND_MS)
            seen = (await sleep(250), await scrape());
          expect(sample(seen, 'ibfleet_nic_ok'), 'ib1 back at 1 after the repair').toBe(1);
          expect(sample(seen, 'ibfleet_repairs_total')).toBe(repairs + 1);
          expect(await sh(34, 'ip -4 rule show | grep -c "from 172.16.34.2 lookup 942"')).toBe('1');
        } finally {
          await sh(34, `kill ${pid} 2>/dev/null; true`);
        }
      });

      it('status says the textfile is missing; rollback removes the textfile and the NHC check with the rest', async () => {
        expect((await run('deploy', '--hosts', '40', '--playbook', MONITORED_QUIET)).code).toBe(0);
        await sh(40, `rm ${TEXTFILE}`);
        const status = await statusOf(MONITORED_QUIET);
        expect([status.statuses[40], status.reasons[40]]).toEqual([
          'drift',
          [`node_exporter textfile ${TEXTFILE} is missing (every run of the routing script writes it)`],
        ]);
        const rolledBack = await run('rollback', '--hosts', 'all', '--json');
        expect(rolledBack.code, rolledBack.stdout).toBe(0);
        for (const id of HOSTS)
          expect(await sh(id, `ls ${TEXTFILE} ${NHC} ${ROUTES} 2>/dev/null; true`), `host ${id}`).toBe('');
      });
    });

    describe('ibfleet export ansible, run with the real ansible-playbook', () => {
      const project = join(work, 'ansible');
      const ansibleIn = (dir: string, cwd: string, ...args: string[]) =>
        ansiblePlaybook(dir, { cwd, controlDir: work }, ...args);
      const ansible = (...args: string[]) => ansibleIn(project, work, ...args);
      const changed = changedOf;

      it(
        'inventory text is data to Ansible: an identityFile or knownHosts with {{ lookup(...) }} in its name runs nothing on the controller, --check included; the key reaches the host as the file it names',
        { timeout: ANSIBLE_TIMEOUT_MS },
        async () => {
          const hostile = join(work, 'hostile');
          const labDir = dirname(lab().inventoryPath);
          // Where a pipe lookup would run on the controller: it leaves a file named for the value it came through.
          const pwned = (what: string, quote: string) =>
            `{{ lookup(${quote}pipe${quote}, ${quote}touch ${hostile}/PWNED-${what}${quote}) }}`;
          const exported = async (name: string, ssh: { identityFile: string; knownHosts: string }) => {
            for (const [path, from] of [
              [ssh.identityFile, 'id_ed25519'],
              [ssh.knownHosts, 'known_hosts'],
            ] as const) {
              mkdirSync(dirname(path), { recursive: true });
              copyFileSync(join(labDir, from), path);
              chmodSync(path, 0o600);
            }
            const inventory = parseDocument(readFileSync(lab().inventoryPath, 'utf8'));
            inventory.setIn(['ssh', 'identityFile'], ssh.identityFile);
            inventory.setIn(['ssh', 'knownHosts'], ssh.knownHosts);
            writeFileSync(join(hostile, `${name}.yaml`), inventory.toString());
            const result = await ibfleet([
              '-i',
              join(hostile, `${name}.yaml`),
              '--no-log',
              'export',
              'ansible',
              '--hosts',
              '40',
              '--out',
              join(hostile, name),
              '--playbook',
              QUIET_REPAIR,
            ]);
            expect(result.code, result.stderr).toBe(0);
            return join(hostile, name);
          };
          // ansible_ssh_private_key_file, as Ansible hands it to ssh (IdentityFile="..."): the host is reached with the key of that literal name.
          const byKey = await exported('key', {
            identityFile: join(hostile, 'keys', `k${pwned('key', "'")}`),
            knownHosts: join(hostile, 'known_hosts'),
          });
          const keyed = await ansibleIn(byKey, hostile, '--check');
          expect(
            readdirSync(hostile).filter((f) => f.startsWith('PWNED')),
            'nothing ran on the controller',
          ).toEqual([]);
          expect(keyed.code, keyed.out).toBe(0);
          expect(keyed.recap.node40, keyed.out).toMatchObject({ unreachable: 0, failed: 0 });
          // ansible_ssh_common_args (ssh splits UserKnownHostsFile at blanks: such a name cannot reach a host, but it must run nothing either).
          const byKnownHosts = await exported('known-hosts', {
            identityFile: join(hostile, 'id_ed25519'),
            knownHosts: join(hostile, 'keys', `kh${pwned('known-hosts', '"')}`),
          });
          await ansibleIn(byKnownHosts, hostile, '--check');
          expect(
            readdirSync(hostile).filter((f) => f.startsWith('PWNED')),
            'nothing ran on the controller',
          ).toEqual([]);
        },
      );

      it('export asks the auto hosts for their manager and writes the project', async () => {
        const result = await run('export', 'ansible', '--hosts', 'all', '--out', project, '--playbook', QUIET_REPAIR);
        expect(result.code, result.stderr).toBe(0);
        expect(result.stdout).toContain(
          `export ansible: 3 hosts (16 networkmanager, 34 netplan, 40 ifupdown) → ${project}`,
        );
      });

      it(
        'deploys (changed > 0), a second run says changed=0, and ibfleet then finds the hosts as its own deploy leaves them',
        { timeout: ANSIBLE_TIMEOUT_MS },
        async () => {
          const first = await ansible();
          expect(first.code, first.out).toBe(0);
          for (const host of ['cpuserver16', 'memserver34', 'node40'])
            expect(first.recap[host]?.changed, first.out).toBeGreaterThan(0);
          const second = await ansible();
          expect(second.code, second.out).toBe(0);
          expect(changed(second.recap)).toEqual({ cpuserver16: 0, memserver34: 0, node40: 0 });
          expect((await statusOf(QUIET_REPAIR)).statuses).toEqual({ 16: 'ok', 34: 'ok', 40: 'ok' });
          const again = json(await run('deploy', '--hosts', 'all', '--playbook', QUIET_REPAIR, '--json'));
          expect(statuses(again)).toEqual({ 16: 'unchanged', 34: 'unchanged', 40: 'unchanged' });
        },
      );

      it(
        "the role takes deploy's host lock: while a deploy holds it the role waits and changes nothing; once it is given back the role runs",
        { timeout: ANSIBLE_TIMEOUT_MS },
        async () => {
          await sh(40, `rm -f ${NHC}`);
          // A deploy's run holding the lock until the test stops it, named in the lock file as deploy names its runs.
          const pidFile = '/run/h1-lock-holder.pid';
          const holder = exec(
            40,
            `exec 9>>${LOCK_PATH}; flock 9; printf 'ibfleet deploy %s test-holder\\n' $$ >${LOCK_PATH}; echo $$ >${pidFile}; exec sleep 600`,
          );
          let playing: ReturnType<typeof ansible> | undefined;
          try {
            await until(
              async () => (await sh(40, `cat ${pidFile} 2>/dev/null; true`)) !== '',
              'the holder took the lock',
            );
            playing = ansible('--limit', 'node40');
            // The role's lock task, waiting: flock on the lock's descriptor. Lab hosts share the
            // machine's process table, so only a flock in host 40's own network namespace counts.
            await until(
              async () =>
                (await sh(
                  40,
                  'for p in $(pgrep -f \'^flock -w [0-9]* 9$\'); do [ "$(readlink /proc/$p/ns/net)" = "$(readlink /proc/self/ns/net)" ] && echo "$p"; done; true',
                )) !== '',
              'the role waits for the lock',
            );
            await sleep(2000);
            expect(await sh(40, `ls ${NHC} 2>/dev/null; true`), 'nothing changed while the lock is held').toBe('');
          } finally {
            await sh(40, `kill "$(cat ${pidFile})"; rm -f ${pidFile}`);
            await holder;
          }
          const played = await playing;
          expect(played.code, played.out).toBe(0);
          expect(await sh(40, `ls ${NHC}`)).toBe(NHC);
        },
      );

      it(
        'a deploy while the role runs finds the host lock held by "another ibfleet ansible" (and is not told unchanged); once the role ends, deploy takes it',
        { timeout: ANSIBLE_TIMEOUT_MS },
        async () => {
          // The routing script's own lock held: the role's first run of the script waits on it (up to 10 s), under the host lock.
          const pidFile = '/run/h1-routes-holder.pid';
          const routesHolder = exec(40, `exec 8>>${ROUTES_LOCK_PATH}; flock 8; echo $$ >${pidFile}; exec sleep 600`);
          await until(
            async () => (await sh(40, `cat ${pidFile} 2>/dev/null; true`)) !== '',
            "the routing script's lock is held",
          );
          let playing: ReturnType<typeof ansible> | undefined;
          try {
            // An earlier run's name stays in the lock file (and its stopped holder may linger as a zombie): this run's names another.
            const earlier = await sh(40, `cat ${LOCK_PATH}`);
            playing = ansible('--limit', 'node40');
            await until(async () => {
              const now = await sh(40, `cat ${LOCK_PATH}`);
              return now !== earlier && now.startsWith('ibfleet ansible ');
            }, 'the role took the host lock');
            const deployed = json(
              await run('deploy', '--hosts', '40', '--playbook', QUIET_REPAIR, '--timeout', '3', '--json'),
            );
            expect(deployed.hosts[0]!.status).toBe('failed');
            expect(deployed.hosts[0]!.error).toMatch(
              /the host lock \/run\/ibfleet\/lock is held by another ibfleet ansible \(its shell is pid \d+\)/,
            );
          } finally {
            await sh(40, `kill "$(cat ${pidFile})"; rm -f ${pidFile}`);
            await routesHolder;
          }
          const played = await playing;
          expect(played.code, played.out).toBe(0);
          expect(await sh(40, `flock -n ${LOCK_PATH} true && echo free`), 'the role gave the lock back').toBe('free');
          expect(statuses(json(await run('deploy', '--hosts', '40', '--playbook', QUIET_REPAIR, '--json')))).toEqual({
            40: 'unchanged',
          });
        },
      );

      it(
        'a playbook without monitor: prometheus: the role removes the textfile a deploy with it left, as deploy would; status ok',
        { timeout: ANSIBLE_TIMEOUT_MS },
        async () => {
          expect((await run('deploy', '--hosts', '40', '--playbook', MONITORED_QUIET)).code).toBe(0);
          expect(await sh(40, `ls ${TEXTFILE}`)).toBe(TEXTFILE);
          const played = await ansible('--limit', 'node40');
          expect(played.code, played.out).toBe(0);
          expect(await sh(40, `ls ${TEXTFILE} 2>/dev/null; true`)).toBe('');
          expect((await statusOf(QUIET_REPAIR)).statuses[40]).toBe('ok');
        },
      );

      it(
        '--check --diff on a host whose rule was deleted reports it changed, says why, and changes nothing',
        { timeout: ANSIBLE_TIMEOUT_MS },
        async () => {
          await sh(34, 'ip -4 rule del from 172.16.34.2 lookup 942');
          const before = await hostState(34);
          const checked = await ansible('--check', '--diff');
          expect(checked.code, checked.out).toBe(0);
          expect(changed(checked.recap)).toEqual({ cpuserver16: 0, memserver34: 1, node40: 0 });
          expect(checked.out).toContain('"ib1: rule from 172.16.34.2 is missing"');
          expect(await hostState(34)).toBe(before);
          const repaired = await ansible();
          expect(changed(repaired.recap)).toEqual({ cpuserver16: 0, memserver34: 1, node40: 0 });
          expect((await statusOf(QUIET_REPAIR)).statuses[34]).toBe('ok');
        },
      );

      it('--check --diff shows a file that would change as a diff', { timeout: ANSIBLE_TIMEOUT_MS }, async () => {
        await sh(16, `echo '# edited' >>${NHC}`);
        const checked = await ansible('--check', '--diff', '--limit', 'cpuserver16');
        expect(checked.out).toMatch(/^-# edited$/m);
        expect(changed(checked.recap)).toEqual({ cpuserver16: 2 });
        expect(await sh(16, `tail -n 1 ${NHC}`)).toBe('# edited');
        expect(changed((await ansible('--limit', 'cpuserver16')).recap)).toEqual({ cpuserver16: 1 });
      });

      it(
        "a host that cannot take the routing fails with ibfleet's message and is left as it was",
        { timeout: ANSIBLE_TIMEOUT_MS },
        async () => {
          await sh(40, `ip link set ${nic(40, 2)} down`);
          try {
            const before = await hostState(40);
            const result = await ansible('--limit', 'node40');
            expect(result.code).not.toBe(0);
            expect(result.out).toMatch(
              /fatal: \[node40\]: FAILED! => .*"msg": "ib1 is down \(it carries 172\.16\.40\.2, but the link is not up\)"/,
            );
            expect(await hostState(40)).toBe(before);
          } finally {
            await sh(40, `ip link set ${nic(40, 2)} up`);
          }
        },
      );

      it(
        "a host that does not verify after its change is put back as it was and fails with ibfleet's reasons, as deploy words them",
        { timeout: ANSIBLE_TIMEOUT_MS },
        async () => {
          expect((await run('rollback', '--hosts', '40')).code).toBe(0);
          // A site rule ahead of ibfleet's sends the fabric subnet to the management network.
          await sh(
            40,
            'ip -4 rule add priority 100 to 172.16.0.0/16 lookup 100 && ip -4 route add 172.16.0.0/16 dev mgmt0 table 100',
          );
          try {
            const before = await hostState(40);
            const result = await ansible('--limit', 'node40');
            expect(result.code).not.toBe(0);
            expect(result.out).toMatch(
              /fatal: \[node40\]: FAILED! => .*"msg": "verification failed: ib0: traffic from 172\.16\.40\.1 leaves through mgmt0 \(table 100\); ib1: traffic from 172\.16\.40\.2 leaves through mgmt0 \(table 100\); rolled back: the host is as it was before this run"/,
            );
            expect(result.recap.node40).toMatchObject({ failed: 1, rescued: 1 });
            expect(await hostState(40), 'the host as it was before the run').toBe(before);
            const deployed = json(await run('deploy', '--hosts', '40', '--playbook', QUIET_REPAIR, '--json'));
            expect(deployed.hosts[0]!.error).toMatch(
              /^verify: verification failed: .*ib0: traffic from 172\.16\.40\.1 leaves through mgmt0 \(table 100\)/,
            );
          } finally {
            await sh(40, 'ip -4 rule del priority 100; ip -4 route flush table 100');
          }
        },
      );
    });
  },
);
