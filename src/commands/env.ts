/**
 * `ibfleet env --hosts S [--for nccl|ucx|mpi] [--format sh|json]`: the settings each host's RDMA
 * jobs need, read from the hosts' ports (src/plan/job-env.ts), as text a job script or a Slurm
 * prolog sources. Nothing changes on a host. Exit 1, naming each host and why, when a host's fabric
 * cannot carry a job: then the shell text is not printed at all, so `eval` gets nothing half-made.
 */
import type { Command } from 'commander';
import type { CommandResult, Io } from './context.js';
import { readOptions, type OptionTools } from './options.js';
import { addRunOptions } from './run-options.js';
import type { EnvLibrary } from '../plan/job-env.js';

/** The libraries env speaks for (job-env.ts's, here so that the command table loads no planning code). */
const ENV_LIBRARIES = ['nccl', 'ucx', 'mpi'] as const satisfies readonly EnvLibrary[];

const envOptions = ({ z }: OptionTools) =>
  z.object({
    hosts: z.string({
      error: "env needs --hosts: the job's hosts (e.g. --hosts 16,34, --hosts pair:alice or --hosts all)",
    }),
    for: z
      .enum(ENV_LIBRARIES, {
        error: (issue) => `--for is one of ${ENV_LIBRARIES.join(', ')}, not ${JSON.stringify(issue.input)}`,
      })
      .optional(),
    format: z
      .enum(['sh', 'json'], { error: (issue) => `--format is sh or json, not ${JSON.stringify(issue.input)}` })
      .optional(),
    playbook: z.string().optional(),
    askSudoPass: z.boolean().default(false),
  });

export function registerEnv(program: Command, io: Io, done: (r: CommandResult) => void): void {
  addRunOptions(
    program
      .command('env')
      .description(
        "the settings each host's RDMA jobs need (NCCL_IB_HCA, NCCL_SOCKET_IFNAME, NCCL_IB_GID_INDEX, UCX_NET_DEVICES, UCX_IB_GID_INDEX, Open MPI's interfaces), read from the hosts' ports, as shell to source or JSON",
      )
      .option('--hosts <set>', "the job's hosts: 16,34 16-20 @gpu pair:alice all")
      .option('--for <library>', `only one library's settings: ${ENV_LIBRARIES.join(', ')} (default: all three)`)
      .option('--format <format>', 'sh (export lines, safe to eval or source; the default) or json')
      .option('--playbook <file>', 'playbook whose probe to run (default: the built-in dual-ib-routing)'),
  ).action(async (raw: Record<string, unknown>, cmd: Command) => {
    const opts = await readOptions(envOptions, raw);
    const [{ readPlaybook, writeJson }, { prepareRun, fanoutOptions }, { runHosts }, { readFactsHost }, env] =
      await Promise.all([
        import('./context.js'),
        import('./fleet-run.js'),
        import('../runner/fanout.js'),
        import('../runner/host-workflows.js'),
        import('../plan/job-env.js'),
      ]);
    const { sanitizeLine } = await import('../ui/text/sanitize.js');
    const playbook = await readPlaybook(opts.playbook, io);
    const run = await prepareRun(io, cmd, { selection: opts.hosts, askSudoPass: opts.askSudoPass });
    const read: { host: (typeof run.hosts)[number]; facts: import('../facts/host-facts.js').HostFacts }[] = [];
    const results = await runHosts(
      run.hosts,
      fanoutOptions(run, {}),
      readFactsHost({ fleet: run.fleet, playbook, transport: run.transport }, (host, facts) =>
        read.push({ host, facts }),
      ),
    );
    const unreached = results
      .filter((r) => r.status !== 'ok')
      .map((r) => ({ host: r.host.id, cause: `${r.status}: ${r.error?.message ?? r.reasons.join('; ')}` }));
    const libraries = opts.for ? [opts.for] : ENV_LIBRARIES;
    const each = env.fabricStates(read, run.fleet).map((s) => env.hostEnv(s, run.fleet, libraries));
    const refused = [...unreached, ...each.filter(env.isRefusal)].sort((a, b) => a.host - b.host);
    const folded = env.foldEnv(each.filter((e) => !env.isRefusal(e)) as import('../plan/job-env.js').HostEnv[]);
    const ok = refused.length === 0 && !run.interrupt.aborted;
    if (opts.format === 'json') writeJson(io, { command: 'env', ok, for: libraries, ...env.envJson(folded, refused) });
    else if (ok)
      io.stdout.write(
        env.renderEnvShell(folded, `ibfleet env --hosts ${opts.hosts}${opts.for ? ` --for ${opts.for}` : ''}`),
      );
    for (const r of refused) io.stderr.write(`ibfleet env: host ${r.host} refused: ${sanitizeLine(r.cause)}\n`);
    if (!ok && opts.format !== 'json')
      io.stderr.write(
        'ibfleet env: nothing printed; fix the hosts above (ibfleet status names the same) or leave them out of --hosts\n',
      );
    done({ verdict: run.interrupt.aborted ? 'interrupted' : ok ? 'ok' : 'failed' });
  });
}
