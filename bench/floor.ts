/**
 * The floor: the least a fan-out over SSH can do. One ssh2 connection per host, one `sh -s` channel
 * that receives the host's rendered routing script on stdin, at most `concurrency` hosts at once
 * (p-limit) — no probe, no plan, no files, no verification. Host keys are still checked against
 * the lab's known_hosts (a fan-out that skips that is not one anybody should run).
 *
 * Run as its own process so its CPU and memory are measured the way ibfleet's are:
 *   node floor.js JOB.json   →  one JSON line on stdout: { results: [{ id, code, channels }] }
 */
import { readFileSync } from 'node:fs';
import pLimit from 'p-limit';
import ssh2 from 'ssh2';

export interface FloorJob {
  readonly concurrency: number;
  readonly user: string;
  readonly identityFile: string;
  readonly knownHostsFile: string;
  readonly timeoutMs: number;
  readonly hosts: readonly {
    readonly id: number;
    readonly address: string;
    readonly port: number;
    readonly scriptFile: string;
  }[];
}

export interface FloorHostResult {
  readonly id: number;
  readonly code: number | null;
  readonly channels: number;
  readonly error?: string;
}

function knownKeys(text: string): Map<string, Set<string>> {
  const keys = new Map<string, Set<string>>();
  for (const line of text.split('\n')) {
    const [names, , key] = line.trim().split(/\s+/);
    if (!names || !key || names.startsWith('#')) continue;
    for (const name of names.split(',')) keys.set(name, (keys.get(name) ?? new Set()).add(key));
  }
  return keys;
}

function runOne(
  job: FloorJob,
  host: FloorJob['hosts'][number],
  privateKey: Buffer,
  known: Map<string, Set<string>>,
): Promise<FloorHostResult> {
  const script = readFileSync(host.scriptFile);
  const name = host.port === 22 ? host.address : `[${host.address}]:${host.port}`;
  return new Promise((resolve) => {
    const client = new ssh2.Client();
    let channels = 0;
    let settled = false;
    const done = (result: Omit<FloorHostResult, 'id' | 'channels'>) => {
      if (settled) return;
      settled = true;
      client.end();
      resolve({ id: host.id, channels, ...result });
    };
    client.on('error', (error: Error) => done({ code: null, error: error.message }));
    client.on('close', () => done({ code: null, error: 'connection closed' }));
    client.on('ready', () => {
      client.exec('sh -s', (error, channel) => {
        if (error) return done({ code: null, error: error.message });
        channels++;
        let code: number | null = null;
        channel.on('exit', (exitCode: number | null) => (code = exitCode));
        channel.on('data', () => undefined);
        channel.stderr.on('data', () => undefined);
        channel.on('close', () => done({ code }));
        channel.end(script);
      });
    });
    client.connect({
      host: host.address,
      port: host.port,
      username: job.user,
      privateKey,
      readyTimeout: job.timeoutMs,
      hostVerifier: (key: Buffer) => known.get(name)?.has(key.toString('base64')) === true,
    });
  });
}

export async function runFloor(job: FloorJob): Promise<FloorHostResult[]> {
  const privateKey = readFileSync(job.identityFile);
  const known = knownKeys(readFileSync(job.knownHostsFile, 'utf8'));
  const limit = pLimit(job.concurrency);
  return Promise.all(job.hosts.map((host) => limit(() => runOne(job, host, privateKey, known))));
}

const jobFile = process.argv[2];
if (jobFile && process.argv[1] && /floor\.(js|ts)$/.test(process.argv[1])) {
  const job = JSON.parse(readFileSync(jobFile, 'utf8')) as FloorJob;
  const results = await runFloor(job);
  process.stdout.write(`${JSON.stringify({ results })}\n`);
  process.exitCode = results.every((r) => r.code === 0) ? 0 : 1;
}
