/**
 * `npm run bench -- --hosts 100` (root): ibfleet against a bare ssh2 fan-out and, where installed,
 * pdsh, clush and Ansible, on N rehearsal-lab hosts. Prints the tables and writes everything
 * measured to bench/results/bench-<time>.json. `--hosts 20,50,100,254` runs the sizes in sequence
 * and fits cost against N; `--nics 8` gives every lab host 8 fabric NICs (multi-rail GPU nodes).
 * Options: --rounds R (3), -c/--concurrency C (32), --timeout S (120),
 * --full-matrix-hosts K (20), --tools pdsh,clush,ansible | none, --name bench,
 * --mgmt-subnet 198.18.200.0/24, --out FILE, --cli PATH (another build's dist/cli.js, to compare),
 * --prober python3|fping|ping (what every lab host has to run verify's ping cells; default python3),
 * --no-verify (deploy, the second deploy, status, rollback and the floor only: a short run for deploy's cost).
 */
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { mkdir, writeFile } from 'node:fs/promises';
import { cpus, totalmem } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { measure, restoreRaisedLimits } from './measure.js';
import { REFERENCE_TOOLS, toolVersion, type ReferenceTool } from './references.js';
import { formatGrowth, formatSize, formatVerdicts, fitGrowth, judgeSize } from './report.js';
import { benchmarkSize, CLI, labDownQuietly, REPO_ROOT, type SizeResult } from './run.js';
import { spread } from './stats.js';
import { isSuite, SUITES } from '../src/lab/suites.js';
import type { ProberKind } from '../src/vocabulary.js';

const PROBERS: readonly ProberKind[] = ['python3', 'fping', 'ping'];

const USAGE = `usage: npm run bench -- --hosts N[,N...] [--nics 2] [--suite bullseye|bookworm|trixie] [--rounds 3] [-c 32] [--timeout 120] [--full-matrix-hosts 20] [--tools pdsh,clush,ansible|none] [--name bench] [--mgmt-subnet 198.18.200.0/24] [--out FILE] [--cli PATH] [--prober python3|fping|ping] [--no-verify]`;

export interface BenchArgs {
  readonly sizes: readonly number[];
  /** Fabric NICs per lab host (2 as the seeds; 8 as multi-rail GPU nodes). */
  readonly nics: number;
  /** The Debian release whose root the lab hosts run on (lab up --suite); default this machine's own /usr. */
  readonly suite: string | undefined;
  readonly rounds: number;
  readonly concurrency: number;
  readonly timeoutS: number;
  readonly fullMatrixHosts: number;
  readonly tools: readonly ReferenceTool[];
  readonly name: string;
  readonly mgmtSubnet: string;
  readonly out: string | undefined;
  /** Another build's dist/cli.js to measure instead of this checkout's (to compare versions). */
  readonly cli: string | undefined;
  /** The prober every lab host runs verify's ping cells with: the lab hides python3 and adds fping to match. */
  readonly prober: ProberKind;
  /** False: no verify rows (deploy's cost alone, in a fraction of the time). */
  readonly verify: boolean;
}

export function parseBenchArgs(argv: readonly string[]): BenchArgs {
  const { values } = parseArgs({
    args: [...argv],
    options: {
      hosts: { type: 'string', default: '100' },
      nics: { type: 'string', default: '2' },
      suite: { type: 'string' },
      rounds: { type: 'string', default: '3' },
      concurrency: { type: 'string', short: 'c', default: '32' },
      timeout: { type: 'string', default: '120' },
      'full-matrix-hosts': { type: 'string', default: '20' },
      tools: { type: 'string', default: REFERENCE_TOOLS.join(',') },
      name: { type: 'string', default: 'bench' },
      'mgmt-subnet': { type: 'string', default: '198.18.200.0/24' },
      out: { type: 'string' },
      cli: { type: 'string' },
      prober: { type: 'string', default: 'python3' },
      'no-verify': { type: 'boolean' },
      help: { type: 'boolean', short: 'h' },
    },
    strict: true,
  });
  if (values.help) {
    process.stdout.write(`${USAGE}\n`);
    process.exit(0);
  }
  const whole = (text: string, what: string, min: number, max: number) => {
    const n = Number(text);
    if (!Number.isInteger(n) || n < min || n > max)
      throw new Error(`${what} must be a whole number ${min}..${max}, not ${JSON.stringify(text)}\n${USAGE}`);
    return n;
  };
  const sizes = values.hosts.split(',').map((s) => whole(s.trim(), '--hosts', 2, 254));
  const tools = values.tools === 'none' || values.tools === '' ? [] : values.tools.split(',').map((t) => t.trim());
  for (const t of tools)
    if (!(REFERENCE_TOOLS as readonly string[]).includes(t))
      throw new Error(`--tools: unknown tool ${t} (known: ${REFERENCE_TOOLS.join(', ')}, or none)`);
  return {
    sizes,
    nics: whole(values.nics, '--nics', 1, 16),
    suite: checkSuite(values.suite),
    rounds: whole(values.rounds, '--rounds', 1, 50),
    concurrency: whole(values.concurrency, '--concurrency', 1, 1024),
    timeoutS: whole(values.timeout, '--timeout', 5, 3600),
    fullMatrixHosts: whole(values['full-matrix-hosts'], '--full-matrix-hosts', 0, 254),
    tools: tools as ReferenceTool[],
    name: values.name,
    mgmtSubnet: values['mgmt-subnet'],
    out: values.out,
    cli: values.cli,
    prober: checkProber(values.prober),
    verify: values['no-verify'] !== true,
  };
}

function checkProber(prober: string): ProberKind {
  if (!(PROBERS as readonly string[]).includes(prober))
    throw new Error(`--prober: unknown prober ${prober} (known: ${PROBERS.join(', ')})\n${USAGE}`);
  return prober as ProberKind;
}

function checkSuite(suite: string | undefined): string | undefined {
  if (suite !== undefined && !isSuite(suite))
    throw new Error(`--suite: unknown suite ${suite} (known: ${SUITES.join(', ')})\n${USAGE}`);
  return suite;
}

/** `ibfleet --help` and `ibfleet render --hosts 34`: the start-up cost a user feels (the lead's target: < 0.3 s). */
async function measureStartup(
  cli: string,
): Promise<Record<string, { wallS: ReturnType<typeof spread>; cpuS: ReturnType<typeof spread> }>> {
  const out: Record<string, { wallS: ReturnType<typeof spread>; cpuS: ReturnType<typeof spread> }> = {};
  for (const [label, args] of [
    ['ibfleet --help', ['--help']],
    ['ibfleet render --hosts 34', ['render', '--hosts', '34']],
  ] as const) {
    const runs = [];
    for (let i = 0; i < 5; i++)
      runs.push(await measure([process.execPath, cli, ...args], { hosts: [], cwd: REPO_ROOT }));
    out[label] = { wallS: spread(runs.map((r) => r.wallS)), cpuS: spread(runs.map((r) => r.toolCpuS)) };
  }
  return out;
}

function environment() {
  const git = (args: string[]) => {
    try {
      return execFileSync('git', args, {
        cwd: REPO_ROOT,
        encoding: 'utf8',
        stdio: ['ignore', 'pipe', 'ignore'],
      }).trim();
    } catch {
      return undefined;
    }
  };
  return {
    cpus: cpus().length,
    cpuModel: cpus()[0]?.model,
    memoryGiB: Math.round(totalmem() / 2 ** 30),
    kernel: readFileSync('/proc/sys/kernel/osrelease', 'utf8').trim(),
    node: process.version,
    ibfleet: (JSON.parse(readFileSync(join(REPO_ROOT, 'package.json'), 'utf8')) as { version: string }).version,
    commit: git(['rev-parse', '--short', 'HEAD']),
    dirtyFiles: git(['status', '--porcelain'])?.split('\n').filter(Boolean).length,
    tools: Object.fromEntries(REFERENCE_TOOLS.map((t) => [t, toolVersion(t) ?? null])),
  };
}

async function main(): Promise<number> {
  let args: BenchArgs;
  try {
    args = parseBenchArgs(process.argv.slice(2));
  } catch (error) {
    process.stderr.write(`bench: ${(error as Error).message}\n`);
    return 2;
  }
  if (process.getuid?.() !== 0) {
    process.stderr.write(
      'bench: needs root (it brings up lab hosts: network namespaces, mounts, sshd); run it with sudo\n',
    );
    return 2;
  }
  const cli = args.cli ?? CLI;
  if (!existsSync(cli)) {
    process.stderr.write(`bench: ${cli} is missing; run npm run build first\n`);
    return 2;
  }
  const log = (line: string) => void process.stderr.write(`bench: ${line}\n`);
  const started = new Date();
  const stop = () => {
    // Ctrl-C: the lab and the raised ARP limits must not outlive the benchmark.
    restoreRaisedLimits();
    void labDownQuietly(args.name).finally(() => process.exit(130));
  };
  process.once('SIGINT', stop);
  process.once('SIGTERM', stop);

  const env = environment();
  log(
    `${env.cpus} CPUs, ${env.memoryGiB} GiB, node ${env.node}; sizes ${args.sizes.join(', ')} × ${args.nics} NICs${args.suite ? ` on ${args.suite}` : ''}; ${args.rounds} rounds; concurrency ${args.concurrency}; tools ${args.tools.join(', ') || 'none'}; prober ${args.prober}`,
  );
  const startup = await measureStartup(cli);
  const sizes: SizeResult[] = [];
  let failure: Error | undefined;
  for (const hosts of args.sizes) {
    try {
      const size = await benchmarkSize({
        hosts,
        nics: args.nics,
        ...(args.suite ? { suite: args.suite } : {}),
        rounds: args.rounds,
        concurrency: args.concurrency,
        timeoutS: args.timeoutS,
        fullMatrixHosts: args.fullMatrixHosts,
        references: args.tools,
        labName: args.name,
        mgmtSubnet: args.mgmtSubnet,
        prober: args.prober,
        verify: args.verify,
        log,
        cli,
      });
      sizes.push(size);
      process.stdout.write(`\n${formatSize(size)}\n`);
    } catch (error) {
      failure = error as Error;
      log(`N = ${hosts} failed: ${failure.message}`);
      break;
    }
  }
  const verdicts = sizes.map(judgeSize);
  const growth = fitGrowth(sizes);
  const startupText = Object.entries(startup)
    .map(
      ([label, s]) =>
        `${label}: ${s.wallS ? `${s.wallS.median.toFixed(3)} s wall (${s.wallS.min.toFixed(3)}–${s.wallS.max.toFixed(3)})` : '—'}, ${s.cpuS ? `${s.cpuS.median.toFixed(3)} s CPU` : '—'}`,
    )
    .join('; ');
  if (sizes.length) process.stdout.write(`\n${formatVerdicts(verdicts)}\n\n${formatGrowth(growth)}\n`);
  process.stdout.write(`\nCLI start-up (5 runs, median): ${startupText}\n`);

  const file =
    args.out ?? join(REPO_ROOT, 'bench', 'results', `bench-${started.toISOString().replace(/[:.]/g, '-')}.json`);
  await mkdir(join(file, '..'), { recursive: true });
  await writeFile(
    file,
    `${JSON.stringify({ startedAt: started.toISOString(), finishedAt: new Date().toISOString(), args, environment: env, startup, sizes, verdicts, growth, ...(failure ? { error: failure.message } : {}) }, null, 2)}\n`,
  );
  process.stdout.write(`\nresults: ${file}\n`);
  return failure ? 1 : 0;
}

process.exitCode = await main();
