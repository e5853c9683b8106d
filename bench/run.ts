/**
 * One benchmark size: bring up N lab hosts of K NICs, then alternate the contenders for several
 * rounds — ibfleet (deploy from the broken state, deploy again, status, verify --ring, the full
 * matrix on a few hosts and verify --rail, each twice, rollback), the bare ssh2 fan-out floor, and pdsh, clush and Ansible where installed —
 * and summarise every row as medians with min–max. The lab always comes down at the end.
 */
import { existsSync } from 'node:fs';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { loadInventory } from '../src/inventory/load.js';
import type { Fleet } from '../src/inventory/model.js';
import type { LabInfo } from '../src/lab/info.js';
import { hostPaths } from '../src/lab/names.js';
import { chooseMatrixMode, type MatrixChoice } from '../src/plan/matrix.js';
import { loadPlaybook } from '../src/playbook/playbook.js';
import { routesDataFor } from '../src/render/host-files.js';
import { ROUTES_PROGRAM } from '../src/script/routes-program.js';
import type { FloorJob, FloorHostResult } from './floor.js';
import { backgroundLoad, measure, raiseNeighbourTable, type HostProbe, type Measurement } from './measure.js';
import {
  findTool,
  prepareReferences,
  referenceCommand,
  stopControlMasters,
  type ReferenceSetup,
  type ReferenceTool,
} from './references.js';
import { spread, type Spread } from './stats.js';
import type { ProberKind } from '../src/vocabulary.js';

export const REPO_ROOT = fileURLToPath(new URL(import.meta.url.endsWith('.ts') ? '..' : '../..', import.meta.url));
export const CLI = join(REPO_ROOT, 'dist', 'cli.js');

export const ROWS = {
  deploy: 'ibfleet deploy',
  deployAgain: 'ibfleet deploy (unchanged)',
  status: 'ibfleet status',
  ring: 'ibfleet verify --ring',
  full: 'ibfleet verify (full matrix)',
  fullAgain: 'ibfleet verify (full, again)',
  rail: 'ibfleet verify --rail',
  railAgain: 'ibfleet verify --rail (again)',
  rollback: 'ibfleet rollback',
  floor: 'floor: ssh2 + p-limit',
  pdsh: 'pdsh',
  clush: 'clush',
  ansible: 'ansible',
} as const;
export type RowName = (typeof ROWS)[keyof typeof ROWS];

export interface SizeOptions {
  readonly hosts: number;
  /** Fabric NICs per host (default 2). */
  readonly nics?: number;
  /** The Debian release whose root the lab hosts run on (their sshd, sh, ip); default the machine's own /usr. */
  readonly suite?: string;
  readonly rounds: number;
  readonly concurrency: number;
  readonly timeoutS: number;
  /** Hosts of the full-matrix verify row (0: skip). */
  readonly fullMatrixHosts: number;
  /** Reference tools to run when installed. */
  readonly references: readonly ReferenceTool[];
  readonly labName: string;
  readonly mgmtSubnet: string;
  /** What every host runs verify's ping cells with (default python3, which every lab host has). */
  readonly prober?: ProberKind;
  /** False: skip the verify rows (default true). */
  readonly verify?: boolean;
  readonly log: (line: string) => void;
  /** How long to sample the machine's load before the runs (default 2 s). */
  readonly backgroundSampleMs?: number;
  /** The ibfleet to measure (default: this checkout's dist/cli.js), e.g. another build to compare with. */
  readonly cli?: string;
}

export interface PerHost {
  readonly mean: number;
  readonly min: number;
  readonly max: number;
}

export interface RunRecord {
  readonly row: RowName;
  readonly round: number;
  /** Hosts the command worked on. */
  readonly hosts: number;
  readonly exitCode: number;
  readonly wallS: number;
  readonly toolCpuS: number;
  readonly machineCpuS: number;
  readonly hostsCpuS: number;
  readonly peakRssMiB: number | null;
  readonly connectionsPerHost: PerHost;
  readonly channelsPerHost: PerHost | null;
  /** Hosts the tool reports as done (ibfleet: changed/unchanged/ok; others: the script exited 0). */
  readonly hostsOk: number;
  /** Hosts whose result was verified on the host after the change (ibfleet only). */
  readonly hostsVerified: number | null;
  /** verify: matrix cells, how many passed, and which matrix it was (full, rail, ring). */
  readonly cells?: { readonly total: number; readonly passed: number; readonly mode?: string };
  readonly note?: string;
}

export interface RowSummary {
  readonly row: RowName;
  readonly hosts: number;
  readonly runs: number;
  readonly wallS: Spread | null;
  readonly toolCpuS: Spread | null;
  readonly cpuMsPerHost: Spread | null;
  readonly wallMsPerHost: Spread | null;
  readonly machineCpuS: Spread | null;
  readonly hostsCpuS: Spread | null;
  readonly peakRssMiB: Spread | null;
  readonly connectionsPerHost: { readonly min: number; readonly max: number } | null;
  readonly channelsPerHost: { readonly min: number; readonly max: number } | null;
  readonly hostsOk: { readonly min: number; readonly max: number };
  readonly hostsVerified: { readonly min: number; readonly max: number } | null;
  readonly cells?: { readonly total: number; readonly passedMin: number; readonly mode?: string };
  readonly failedRuns: number;
}

export interface SizeResult {
  readonly hosts: number;
  readonly nics: number;
  /** What the hosts ran verify's ping cells with (absent in results from before --prober: python3). */
  readonly prober?: ProberKind;
  /** The lab hosts' Debian suite (absent: the machine's own /usr). */
  readonly suite?: string;
  /** The matrix `verify --hosts all` checks at this size without a mode, and why (src/plan/matrix.ts). */
  readonly verifyDefault: MatrixChoice;
  readonly labUpS: number;
  /** Busy CPUs of the machine before the runs (other work sharing it). */
  readonly backgroundCpus: number;
  readonly skipped: readonly string[];
  readonly runs: readonly RunRecord[];
  readonly rows: readonly RowSummary[];
}

const perHost = (values: readonly number[]): PerHost => ({
  mean: values.reduce((s, v) => s + v, 0) / Math.max(values.length, 1),
  min: Math.min(...values),
  max: Math.max(...values),
});

/** The environment every measured command gets: no agent (the lab key only), no colours. */
function childEnv(): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env, NO_COLOR: '1', IBFLEET_PLAIN: '1' };
  delete env.SSH_AUTH_SOCK;
  delete env.FORCE_COLOR;
  return env;
}

/** The floor runs compiled like ibfleet does; from the TypeScript sources (the vitest smoke) through tsx. */
function floorCommand(): string[] {
  const here = dirname(fileURLToPath(import.meta.url));
  const js = join(here, 'floor.js');
  if (existsSync(js)) return [process.execPath, js];
  return [process.execPath, '--import', 'tsx', join(here, 'floor.ts')];
}

async function labCli(args: readonly string[]): Promise<Measurement> {
  return measure([process.execPath, CLI, ...args], { hosts: [], cwd: REPO_ROOT, env: childEnv() });
}

export async function labDownQuietly(name: string): Promise<void> {
  await labCli(['lab', 'down', '--name', name]).catch(() => undefined);
}

interface IbfleetHostJson {
  readonly id: number;
  readonly status: string;
  readonly error: string | null;
  readonly ssh?: { readonly connections: number; readonly channels: number };
}
interface IbfleetJson {
  readonly ok: boolean;
  readonly hosts: readonly IbfleetHostJson[];
  readonly matrix?: readonly { readonly ok: boolean | null }[];
  readonly matrixMode?: string;
}

function parseDoc(m: Measurement, what: string): IbfleetJson {
  try {
    return JSON.parse(m.stdout) as IbfleetJson;
  } catch {
    throw new Error(
      `${what}: no JSON document (exit ${m.exitCode}): ${m.stderr.trim().split('\n').slice(-5).join(' | ')}`,
    );
  }
}

/** lab up's options that leave every host `prober` as the best it has (chooseProber: python3, then fping, then ping). */
function proberOptions(prober: ProberKind, hosts: number): string[] {
  const all = `1-${hosts}`;
  return prober === 'python3' ? [] : ['--without-python3', all, ...(prober === 'fping' ? ['--with-fping', all] : [])];
}

export async function benchmarkSize(options: SizeOptions): Promise<SizeResult> {
  const log = options.log;
  const ids = Array.from({ length: options.hosts }, (_, i) => i + 1);
  await labDownQuietly(options.labName);
  const work = await mkdtemp(join(tmpdir(), `ibfleet-bench-${options.hosts}-`));
  const restoreNeighbourTable = raiseNeighbourTable(log);
  try {
    log(`lab ${options.labName}: bringing up ${options.hosts} hosts on ${options.mgmtSubnet}`);
    // Without network managers: the benchmark times ibfleet, and 254 hosts' daemons and repair timers
    // (a routing-script run every 30 s per host) would add background CPU to every timed round.
    const up = await labCli([
      '--json',
      'lab',
      'up',
      '--name',
      options.labName,
      '--hosts',
      `1-${options.hosts}`,
      '--nics',
      String(options.nics ?? 2),
      '--mgmt-subnet',
      options.mgmtSubnet,
      '--no-managers',
      ...(options.suite ? ['--suite', options.suite] : []),
      ...proberOptions(options.prober ?? 'python3', options.hosts),
    ]);
    if (up.exitCode !== 0) throw new Error(`lab up failed (exit ${up.exitCode}): ${up.stderr.trim()}`);
    const lab = (JSON.parse(up.stdout) as { lab: LabInfo }).lab;
    log(`lab up in ${up.wallS.toFixed(1)} s`);
    return await runRounds(options, lab, ids, work, up.wallS);
  } finally {
    await labDownQuietly(options.labName);
    restoreNeighbourTable();
    await rm(work, { recursive: true, force: true });
  }
}

async function runRounds(
  options: SizeOptions,
  lab: LabInfo,
  ids: readonly number[],
  work: string,
  labUpS: number,
): Promise<SizeResult> {
  const log = options.log;
  const env = childEnv();
  const probes: HostProbe[] = lab.hosts.map((h) => ({
    id: h.id,
    sshdLog: h.sshdLog,
    sshdPidFile: hostPaths(lab.name, h.id).sshdPid,
  }));
  const fleet: Fleet = loadInventory(await readFile(lab.inventoryPath, 'utf8'), lab.inventoryPath);
  const playbook = loadPlaybook(
    await readFile(join(REPO_ROOT, 'playbooks/dual-ib-routing.yaml'), 'utf8'),
    'dual-ib-routing.yaml',
  );
  const user = fleet.hosts[0]?.user ?? 'root';

  // The floor and the reference tools run exactly the routing program and the data ibfleet renders
  // for each host, both put down beside each other as deploy puts them (in a directory of their own).
  const scripts = new Map(fleet.hosts.map((h) => [h.id, programWithData(routesDataFor(playbook, h, fleet))]));
  const refHosts = lab.hosts.map((h) => ({ id: h.id, address: h.address }));
  const setup = await prepareReferences(
    join(work, 'refs'),
    refHosts,
    scripts,
    { identityFile: lab.identityPath, knownHostsFile: lab.knownHostsPath, user },
    options.concurrency,
  );
  const floorJob: FloorJob = {
    concurrency: options.concurrency,
    user,
    identityFile: lab.identityPath,
    knownHostsFile: lab.knownHostsPath,
    timeoutMs: options.timeoutS * 1000,
    hosts: lab.hosts.map((h) => ({
      id: h.id,
      address: h.address,
      port: 22,
      scriptFile: join(setup.scriptsDir, `${h.address}.sh`),
    })),
  };
  const floorJobFile = join(work, 'floor-job.json');
  await writeFile(floorJobFile, JSON.stringify(floorJob));

  const skipped: string[] = [];
  const prober = options.prober ?? 'python3';
  const tools = options.references.filter((t) => {
    if (t === 'ansible' && prober !== 'python3') {
      // Its modules run in the hosts' python3, which the lab hid for this prober.
      skipped.push(`ansible: the hosts have no python3 (--prober ${prober})`);
      return false;
    }
    if (findTool(t)) return true;
    skipped.push(`${t}: not installed`);
    return false;
  });
  const fullHosts = Math.min(options.fullMatrixHosts, options.hosts);
  if (options.fullMatrixHosts > 0 && fullHosts < 2) skipped.push('verify full matrix: needs at least 2 hosts');

  const cli = options.cli ?? CLI;
  const ibfleet = (args: readonly string[], selection: readonly number[] = ids) =>
    measure(
      [
        process.execPath,
        cli,
        '-i',
        lab.inventoryPath,
        '-c',
        String(options.concurrency),
        '--timeout',
        String(options.timeoutS),
        '--json',
        ...args,
      ],
      { hosts: probes.filter((p) => selection.includes(p.id)), env, cwd: REPO_ROOT },
    );

  const runs: RunRecord[] = [];
  const record = (r: RunRecord) => {
    runs.push(r);
    const cpuMs = (r.toolCpuS * 1000) / r.hosts;
    log(
      `  round ${r.round} ${r.row.padEnd(28)} ${r.wallS.toFixed(2).padStart(7)} s wall  ${r.toolCpuS.toFixed(2).padStart(6)} s cpu (${cpuMs.toFixed(1)} ms/host)  ok ${r.hostsOk}/${r.hosts}${r.hostsVerified === null ? '' : `  verified ${r.hostsVerified}`}  conn/host ${r.connectionsPerHost.min}-${r.connectionsPerHost.max}${r.channelsPerHost ? `  chan/host ${r.channelsPerHost.min}-${r.channelsPerHost.max}` : ''}${r.note ? `  (${r.note})` : ''}`,
    );
  };

  const loginsPerHost = (m: Measurement, selection: readonly number[]) =>
    perHost(selection.map((id) => m.logins.get(id) ?? 0));
  const common = (m: Measurement, selection: readonly number[]) => ({
    hosts: selection.length,
    exitCode: m.exitCode,
    wallS: m.wallS,
    toolCpuS: m.toolCpuS,
    machineCpuS: m.machineCpuS,
    hostsCpuS: m.hostsCpuS,
    peakRssMiB: m.peakRssMiB,
    connectionsPerHost: loginsPerHost(m, selection),
  });

  const ibfleetRecord = (
    row: RowName,
    round: number,
    m: Measurement,
    selection: readonly number[],
    good: readonly string[],
  ): RunRecord => {
    const doc = parseDoc(m, row);
    const okHosts = doc.hosts.filter((h) => good.includes(h.status));
    const failed = doc.hosts.filter((h) => !good.includes(h.status));
    const channels = doc.hosts.map((h) => h.ssh?.channels ?? 0);
    const cells = doc.matrix
      ? {
          total: doc.matrix.length,
          passed: doc.matrix.filter((c) => c.ok === true).length,
          ...(doc.matrixMode ? { mode: doc.matrixMode } : {}),
        }
      : undefined;
    const verifiedRow = row !== ROWS.rollback;
    return {
      row,
      round,
      ...common(m, selection),
      channelsPerHost: perHost(channels),
      hostsOk: okHosts.length,
      hostsVerified: verifiedRow ? okHosts.length : null,
      ...(cells ? { cells } : {}),
      ...(failed.length
        ? {
            note: `${failed.length} not ok, e.g. host ${failed[0]!.id} ${failed[0]!.status}: ${failed[0]!.error ?? ''}`,
          }
        : {}),
    };
  };

  /** Back to the broken state the seeds describe (untimed); every changing row starts from it. */
  const reset = async () => {
    const m = await ibfleet(['rollback', '--hosts', 'all']);
    const doc = parseDoc(m, 'reset');
    const bad = doc.hosts.filter((h) => h.status !== 'changed' && h.status !== 'unchanged');
    if (bad.length)
      throw new Error(`reset (rollback) failed on ${bad.length} hosts, e.g. ${bad[0]!.id}: ${bad[0]!.error}`);
  };

  const verifyRows = async (round: number) => {
    const ring = await ibfleet(['verify', '--ring', '--no-rping', '--hosts', 'all']);
    record(ibfleetRecord(ROWS.ring, round, ring, ids, ['ok']));
    if (fullHosts >= 2) {
      const selection = ids.slice(0, fullHosts);
      // --full: a selection of the lab, asked for as the full matrix whatever the default would choose.
      const full = await ibfleet(['verify', '--full', '--no-rping', '--hosts', `1-${fullHosts}`], selection);
      record(ibfleetRecord(ROWS.full, round, full, selection, ['ok']));
      const again = await ibfleet(['verify', '--full', '--no-rping', '--hosts', `1-${fullHosts}`], selection);
      record(ibfleetRecord(ROWS.fullAgain, round, again, selection, ['ok']));
    }
    // Each matrix twice: the first after a deploy, which flushed the NICs' neighbours, resolves
    // every destination by ARP — in the lab a broadcast to every fabric port of every host, all on
    // this machine's CPUs; the second finds them resolved, as a health gate between jobs does.
    const rail = await ibfleet(['verify', '--rail', '--no-rping', '--hosts', 'all']);
    record(ibfleetRecord(ROWS.rail, round, rail, ids, ['ok']));
    const railAgain = await ibfleet(['verify', '--rail', '--no-rping', '--hosts', 'all']);
    record(ibfleetRecord(ROWS.railAgain, round, railAgain, ids, ['ok']));
  };

  const units: Record<string, (round: number) => Promise<void>> = {
    ibfleet: async (round) => {
      const deploy = await ibfleet(['deploy', '--hosts', 'all']);
      record(ibfleetRecord(ROWS.deploy, round, deploy, ids, ['changed', 'unchanged']));
      const again = await ibfleet(['deploy', '--hosts', 'all']);
      record(ibfleetRecord(ROWS.deployAgain, round, again, ids, ['unchanged']));
      const status = await ibfleet(['status', '--hosts', 'all']);
      record(ibfleetRecord(ROWS.status, round, status, ids, ['ok']));
      if (options.verify !== false) await verifyRows(round);
      const rollback = await ibfleet(['rollback', '--hosts', 'all']);
      record(ibfleetRecord(ROWS.rollback, round, rollback, ids, ['changed']));
    },
    floor: async (round) => {
      const m = await measure([...floorCommand(), floorJobFile], { hosts: probes, env, cwd: REPO_ROOT });
      let results: FloorHostResult[] = [];
      try {
        results = (JSON.parse(m.stdout) as { results: FloorHostResult[] }).results;
      } catch {
        throw new Error(`floor: no result (exit ${m.exitCode}): ${m.stderr.trim()}`);
      }
      const bad = results.filter((r) => r.code !== 0);
      record({
        row: ROWS.floor,
        round,
        ...common(m, ids),
        channelsPerHost: perHost(results.map((r) => r.channels)),
        hostsOk: results.length - bad.length,
        hostsVerified: null,
        ...(bad.length
          ? { note: `${bad.length} failed, e.g. host ${bad[0]!.id}: ${bad[0]!.error ?? `exit ${bad[0]!.code}`}` }
          : {}),
      });
      await reset();
    },
  };
  for (const tool of tools) {
    units[tool] = async (round) => {
      const command = referenceCommand(tool, setup as ReferenceSetup, refHosts, options.concurrency, round, env);
      let masters = 0;
      const m = await measure(command.argv, {
        hosts: probes,
        env: command.env,
        cwd: setup.dir,
        afterExit: () => void (masters = tool === 'ansible' ? stopControlMasters(join(setup.dir, `cp-${round}`)) : 0),
      });
      const ok = command.hostsOk(m.stdout);
      record({
        row: ROWS[tool],
        round,
        ...common(m, ids),
        // pdsh and clush run one `ssh HOST sh -s` per host: one session channel. Ansible multiplexes
        // several per connection; sshd's INFO log does not show how many.
        channelsPerHost: tool === 'ansible' ? null : { mean: 1, min: 1, max: 1 },
        hostsOk: ok,
        hostsVerified: null,
        ...(ok < ids.length
          ? {
              note: `exit ${m.exitCode}: ${(m.stderr || m.stdout).trim().split('\n').slice(-2).join(' | ').slice(0, 300)}`,
            }
          : masters
            ? { note: `${masters} ControlPersist masters stopped after the run` }
            : {}),
      });
      await reset();
    };
  }

  const background = await backgroundLoad(options.backgroundSampleMs ?? 2000);
  log(`background load before the runs: ${background.toFixed(2)} busy CPUs`);
  // Warm-up (untimed): page cache, sshd's first fork, and a deploy: a lab host's /etc is an overlay,
  // and the first file written under a directory copies that directory up, a cost real hosts never
  // pay; only ibfleet writes files, so without this its first round alone would carry it.
  const warm = await ibfleet(['deploy', '--hosts', 'all']);
  parseDoc(warm, 'warm-up deploy');
  await reset();

  const order = Object.keys(units);
  for (let round = 1; round <= options.rounds; round++) {
    // A/B alternation: the order reverses every round, so neither side always runs first.
    const sequence = round % 2 === 1 ? order : [...order].reverse();
    for (const unit of sequence) await units[unit]!(round);
  }

  return {
    hosts: options.hosts,
    nics: options.nics ?? 2,
    prober: options.prober ?? 'python3',
    ...(options.suite ? { suite: options.suite } : {}),
    verifyDefault: chooseMatrixMode(fleet.hosts, undefined),
    labUpS,
    backgroundCpus: background,
    skipped,
    runs,
    rows: summarise(runs),
  };
}

export function summarise(runs: readonly RunRecord[]): RowSummary[] {
  const rows: RowSummary[] = [];
  for (const row of Object.values(ROWS)) {
    const mine = runs.filter((r) => r.row === row);
    if (mine.length === 0) continue;
    const hosts = mine[0]!.hosts;
    const range = (values: readonly number[]) => ({ min: Math.min(...values), max: Math.max(...values) });
    const channelRuns = mine.filter((r) => r.channelsPerHost !== null);
    const verifiedRuns = mine.filter((r) => r.hostsVerified !== null);
    const cellRuns = mine.filter((r) => r.cells);
    rows.push({
      row,
      hosts,
      runs: mine.length,
      wallS: spread(mine.map((r) => r.wallS)),
      toolCpuS: spread(mine.map((r) => r.toolCpuS)),
      cpuMsPerHost: spread(mine.map((r) => (r.toolCpuS * 1000) / r.hosts)),
      wallMsPerHost: spread(mine.map((r) => (r.wallS * 1000) / r.hosts)),
      machineCpuS: spread(mine.map((r) => r.machineCpuS)),
      hostsCpuS: spread(mine.map((r) => r.hostsCpuS)),
      peakRssMiB: spread(mine.map((r) => r.peakRssMiB ?? Number.NaN)),
      connectionsPerHost: range(mine.flatMap((r) => [r.connectionsPerHost.min, r.connectionsPerHost.max])),
      channelsPerHost: channelRuns.length
        ? range(channelRuns.flatMap((r) => [r.channelsPerHost!.min, r.channelsPerHost!.max]))
        : null,
      hostsOk: range(mine.map((r) => r.hostsOk)),
      hostsVerified: verifiedRuns.length ? range(verifiedRuns.map((r) => r.hostsVerified!)) : null,
      ...(cellRuns.length
        ? {
            cells: {
              total: cellRuns[0]!.cells!.total,
              passedMin: Math.min(...cellRuns.map((r) => r.cells!.passed)),
              ...(cellRuns[0]!.cells!.mode ? { mode: cellRuns[0]!.cells!.mode } : {}),
            },
          }
        : {}),
      failedRuns: mine.filter((r) => r.exitCode !== 0 || r.hostsOk < r.hosts).length,
    });
  }
  return rows;
}

/** One script that puts the routing program and a host's data down in a new directory and runs the program there. */
function programWithData(data: string): string {
  return [
    'd=$(mktemp -d) || exit 1',
    'cat >"$d/routes.conf" <<\'IBFLEET_ROUTES_DATA\'',
    data.replace(/\n$/, ''),
    'IBFLEET_ROUTES_DATA',
    'cat >"$d/ibfleet-routes" <<\'IBFLEET_ROUTES_PROGRAM\'',
    ROUTES_PROGRAM.replace(/\n$/, ''),
    'IBFLEET_ROUTES_PROGRAM',
    'sh "$d/ibfleet-routes"',
    'rc=$?',
    'rm -rf "$d"',
    'exit "$rc"',
    '',
  ].join('\n');
}
