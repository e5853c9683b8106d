/** The benchmark's verdicts and text: ratios, targets, the fit against N, and the tables. Pure. */
import type { RowName, RowSummary, SizeResult } from './run.js';
import { ROWS } from './run.js';
import { fitLinear, type LinearFit, type Spread } from './stats.js';

export interface Ratio {
  readonly wall: number | null;
  readonly cpu: number | null;
}

export interface SizeVerdict {
  readonly hosts: number;
  readonly ratios: {
    readonly ibfleetOverFloor: Ratio;
    readonly pdshOverIbfleet: Ratio;
    readonly clushOverIbfleet: Ratio;
    readonly ansibleOverIbfleet: Ratio;
    readonly pdshOverFloor: Ratio;
    readonly ansibleOverFloor: Ratio;
  };
  readonly targets: {
    /** Issue 7: deploy within 1.25× of the floor's wall time (the target is set for N = 100). */
    readonly deployWithin125xFloor: boolean | null;
    /** ibfleet's own CPU per host, deploy: at most 10 ms. */
    readonly deployCpuMsPerHost: number | null;
    readonly cpuAtMost10msPerHost: boolean | null;
    /** Every host deployed (and verified on the host) and every host verified by the ring. */
    readonly allDeployedAndVerified: boolean;
    /** Every ibfleet command: exactly one SSH connection per host. */
    readonly oneConnectionPerHost: boolean;
  };
  /** Verify cost per host: the ring and the rails over all N, the full matrix over its smaller set. */
  readonly verifyPerHost: {
    readonly ring: { readonly wallMs: number | null; readonly cpuMs: number | null; readonly hosts: number } | null;
    readonly rail: {
      readonly wallMs: number | null;
      readonly cpuMs: number | null;
      readonly hosts: number;
      readonly cellsPerHost: number;
    } | null;
    readonly full: {
      readonly wallMs: number | null;
      readonly cpuMs: number | null;
      readonly hosts: number;
      readonly cellsPerHost: number;
    } | null;
  };
}

const med = (s: Spread | null | undefined) => s?.median ?? null;
const div = (a: number | null, b: number | null) => (a === null || b === null || b === 0 ? null : a / b);

function row(size: SizeResult, name: RowName): RowSummary | undefined {
  return size.rows.find((r) => r.row === name);
}

function ratio(size: SizeResult, top: RowName, bottom: RowName): Ratio {
  const a = row(size, top);
  const b = row(size, bottom);
  return { wall: div(med(a?.wallS), med(b?.wallS)), cpu: div(med(a?.toolCpuS), med(b?.toolCpuS)) };
}

const IBFLEET_ROWS: readonly RowName[] = [
  ROWS.deploy,
  ROWS.deployAgain,
  ROWS.status,
  ROWS.ring,
  ROWS.full,
  ROWS.fullAgain,
  ROWS.rail,
  ROWS.railAgain,
  ROWS.rollback,
];

export function judgeSize(size: SizeResult): SizeVerdict {
  const deploy = row(size, ROWS.deploy);
  const ring = row(size, ROWS.ring);
  const full = row(size, ROWS.full);
  const rail = row(size, ROWS.rail);
  const within = ratio(size, ROWS.deploy, ROWS.floor).wall;
  const cpuMs = med(deploy?.cpuMsPerHost);
  const ibfleetRows = size.rows.filter((r) => IBFLEET_ROWS.includes(r.row));
  return {
    hosts: size.hosts,
    ratios: {
      ibfleetOverFloor: ratio(size, ROWS.deploy, ROWS.floor),
      pdshOverIbfleet: ratio(size, ROWS.pdsh, ROWS.deploy),
      clushOverIbfleet: ratio(size, ROWS.clush, ROWS.deploy),
      ansibleOverIbfleet: ratio(size, ROWS.ansible, ROWS.deploy),
      pdshOverFloor: ratio(size, ROWS.pdsh, ROWS.floor),
      ansibleOverFloor: ratio(size, ROWS.ansible, ROWS.floor),
    },
    targets: {
      deployWithin125xFloor: within === null ? null : within <= 1.25,
      deployCpuMsPerHost: cpuMs,
      cpuAtMost10msPerHost: cpuMs === null ? null : cpuMs <= 10,
      allDeployedAndVerified:
        (deploy?.hostsVerified?.min ?? 0) === size.hosts &&
        (ring?.hostsVerified?.min ?? 0) === size.hosts &&
        (ring?.cells ? ring.cells.passedMin === ring.cells.total : false),
      oneConnectionPerHost:
        ibfleetRows.length > 0 &&
        ibfleetRows.every((r) => r.connectionsPerHost?.min === 1 && r.connectionsPerHost.max === 1),
    },
    verifyPerHost: {
      ring: ring ? { wallMs: med(ring.wallMsPerHost), cpuMs: med(ring.cpuMsPerHost), hosts: ring.hosts } : null,
      rail: rail
        ? {
            wallMs: med(rail.wallMsPerHost),
            cpuMs: med(rail.cpuMsPerHost),
            hosts: rail.hosts,
            cellsPerHost: (rail.cells?.total ?? 0) / rail.hosts,
          }
        : null,
      full: full
        ? {
            wallMs: med(full.wallMsPerHost),
            cpuMs: med(full.cpuMsPerHost),
            hosts: full.hosts,
            cellsPerHost: (full.cells?.total ?? 0) / full.hosts,
          }
        : null,
    },
  };
}

export interface GrowthFit {
  readonly row: RowName;
  readonly sizes: readonly number[];
  readonly wall: LinearFit;
  readonly cpu: LinearFit;
}

/** Time and CPU against N for every row measured at three or more sizes. */
export function fitGrowth(sizes: readonly SizeResult[]): GrowthFit[] {
  if (sizes.length < 2) return [];
  const fits: GrowthFit[] = [];
  for (const name of Object.values(ROWS)) {
    if (name === ROWS.full || name === ROWS.fullAgain) continue; // a fixed host count, not N
    const points = sizes.flatMap((s) => {
      const r = row(s, name);
      return r && r.wallS && r.toolCpuS ? [{ n: s.hosts, wall: r.wallS.median, cpu: r.toolCpuS.median }] : [];
    });
    if (points.length < 2) continue;
    fits.push({
      row: name,
      sizes: points.map((p) => p.n),
      wall: fitLinear(points.map((p) => ({ n: p.n, y: p.wall }))),
      cpu: fitLinear(points.map((p) => ({ n: p.n, y: p.cpu }))),
    });
  }
  return fits;
}

// ---- text ----

const num = (v: number | null | undefined, digits = 2) =>
  v === null || v === undefined || !Number.isFinite(v) ? '—' : v.toFixed(digits);
const sp = (s: Spread | null, digits = 2) =>
  s ? `${num(s.median, digits)} (${num(s.min, digits)}–${num(s.max, digits)})` : '—';
const range = (r: { min: number; max: number } | null, digits = 0) =>
  r ? (r.min === r.max ? num(r.min, digits) : `${num(r.min, digits)}–${num(r.max, digits)}`) : '—';
const x = (v: number | null) => (v === null ? '—' : `${v.toFixed(2)}×`);

function table(headers: readonly string[], lines: readonly (readonly string[])[], alignLeft = 1): string {
  const widths = headers.map((h, i) => Math.max(h.length, ...lines.map((l) => l[i]!.length)));
  const fmt = (cells: readonly string[]) =>
    `| ${cells.map((c, i) => (i < alignLeft ? c.padEnd(widths[i]!) : c.padStart(widths[i]!))).join(' | ')} |`;
  return [
    fmt(headers),
    `|${widths.map((w, i) => (i < alignLeft ? `:${'-'.repeat(w + 1)}` : `${'-'.repeat(w + 1)}:`)).join('|')}|`,
    ...lines.map(fmt),
  ].join('\n');
}

export function formatSize(size: SizeResult): string {
  const headers = [
    'row',
    'hosts',
    'cells',
    'wall s: median (min–max)',
    'cells/s',
    'tool CPU s',
    'CPU ms/host',
    'machine CPU s',
    "hosts' sshd CPU s",
    'peak RSS MiB',
    'conn/host',
    'chan/host',
    'ok',
    'verified',
  ];
  const lines = size.rows.map((r) => [
    r.row,
    String(r.hosts),
    r.cells && r.cells.total > 0 ? String(r.cells.total) : '',
    sp(r.wallS),
    r.cells && r.cells.total > 0 && r.wallS ? num(r.cells.total / r.wallS.median, 0) : '',
    sp(r.toolCpuS),
    num(r.cpuMsPerHost?.median ?? null, 1),
    num(r.machineCpuS?.median ?? null),
    num(r.hostsCpuS?.median ?? null),
    num(r.peakRssMiB?.median ?? null, 0),
    range(r.connectionsPerHost),
    range(r.channelsPerHost),
    range(r.hostsOk),
    range(r.hostsVerified),
  ]);
  const verify = `verify --hosts all without a mode checks: ${size.verifyDefault.mode}${size.verifyDefault.reason ? ` (${size.verifyDefault.reason})` : ''}`;
  const head = `N = ${size.hosts} × ${size.nics} NICs${size.suite ? ` on ${size.suite}` : ''}, prober ${size.prober ?? 'python3'}: ${verify}\n${size.rows[0]?.runs ?? 0} rounds, lab up ${size.labUpS.toFixed(1)} s, background load ${size.backgroundCpus.toFixed(2)} CPUs${size.skipped.length ? `; skipped: ${size.skipped.join('; ')}` : ''}`;
  return `${head}\n${table(headers, lines)}`;
}

export function formatVerdicts(verdicts: readonly SizeVerdict[]): string {
  const ratioHeaders = [
    'N',
    'ibfleet/floor wall',
    'ibfleet/floor CPU',
    'pdsh/ibfleet wall',
    'pdsh/ibfleet CPU',
    'clush/ibfleet wall',
    'clush/ibfleet CPU',
    'ansible/ibfleet wall',
    'ansible/ibfleet CPU',
    'pdsh/floor wall',
    'ansible/floor wall',
  ];
  const ratioLines = verdicts.map((v) => [
    String(v.hosts),
    x(v.ratios.ibfleetOverFloor.wall),
    x(v.ratios.ibfleetOverFloor.cpu),
    x(v.ratios.pdshOverIbfleet.wall),
    x(v.ratios.pdshOverIbfleet.cpu),
    x(v.ratios.clushOverIbfleet.wall),
    x(v.ratios.clushOverIbfleet.cpu),
    x(v.ratios.ansibleOverIbfleet.wall),
    x(v.ratios.ansibleOverIbfleet.cpu),
    x(v.ratios.pdshOverFloor.wall),
    x(v.ratios.ansibleOverFloor.wall),
  ]);
  const yes = (b: boolean | null) => (b === null ? '—' : b ? 'met' : 'MISSED');
  const targetHeaders = [
    'N',
    'deploy ≤ 1.25× floor',
    'deploy CPU ms/host (≤ 10)',
    'all deployed + verified',
    '1 connection/host',
    'ring ms/host wall, CPU',
    'full matrix ms/host wall, CPU (hosts, cells/host)',
    'rail ms/host wall, CPU (cells/host)',
  ];
  const targetLines = verdicts.map((v) => [
    String(v.hosts),
    `${yes(v.targets.deployWithin125xFloor)} (${x(v.ratios.ibfleetOverFloor.wall)})`,
    `${yes(v.targets.cpuAtMost10msPerHost)} (${num(v.targets.deployCpuMsPerHost, 1)})`,
    yes(v.targets.allDeployedAndVerified),
    yes(v.targets.oneConnectionPerHost),
    v.verifyPerHost.ring ? `${num(v.verifyPerHost.ring.wallMs, 0)}, ${num(v.verifyPerHost.ring.cpuMs, 1)}` : '—',
    v.verifyPerHost.full
      ? `${num(v.verifyPerHost.full.wallMs, 0)}, ${num(v.verifyPerHost.full.cpuMs, 1)} (${v.verifyPerHost.full.hosts}, ${num(v.verifyPerHost.full.cellsPerHost, 0)})`
      : '—',
    v.verifyPerHost.rail
      ? `${num(v.verifyPerHost.rail.wallMs, 0)}, ${num(v.verifyPerHost.rail.cpuMs, 1)} (${num(v.verifyPerHost.rail.cellsPerHost, 0)})`
      : '—',
  ]);
  return `Ratios (medians)\n${table(ratioHeaders, ratioLines)}\n\nTargets (issue 7)\n${table(targetHeaders, targetLines)}`;
}

export function formatGrowth(fits: readonly GrowthFit[]): string {
  if (fits.length === 0) return 'Growth against N: run several sizes (e.g. --hosts 20,50,100,254) to fit it.';
  const headers = [
    'row',
    'N',
    'wall ms/host (slope)',
    'wall fixed s',
    'wall R²',
    'wall exp',
    'wall',
    'CPU ms/host (slope)',
    'CPU fixed s',
    'CPU R²',
    'CPU exp',
    'CPU',
  ];
  const lines = fits.map((f) => [
    f.row,
    f.sizes.join(','),
    num(f.wall.slope * 1000, 1),
    num(f.wall.intercept),
    num(f.wall.r2, 3),
    num(f.wall.exponent, 2),
    `${f.wall.verdict} (${num(f.wall.marginalFirst * 1000, 1)} → ${num(f.wall.marginalLast * 1000, 1)} ms/host)`,
    num(f.cpu.slope * 1000, 1),
    num(f.cpu.intercept),
    num(f.cpu.r2, 3),
    num(f.cpu.exponent, 2),
    `${f.cpu.verdict} (${num(f.cpu.marginalFirst * 1000, 1)} → ${num(f.cpu.marginalLast * 1000, 1)} ms/host)`,
  ]);
  return `Growth against N (least squares y = fixed + slope·N; exp = log-log exponent; marginal cost per added host, first → last interval)\n${table(headers, lines)}`;
}
