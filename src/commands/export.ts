/**
 * `ibfleet export ansible --hosts S --out DIR [--playbook P]`: an Ansible project that does what
 * deploy does (src/render/ansible-project.ts renders it, pure). A host whose inventory says
 * `manager: auto` is asked which manager it runs (read-only, status's probe); every other host is
 * not contacted. DIR is written whole or not at all: new, empty or an earlier export only (out-dir.ts, replaceTree).
 */
import type { Command } from 'commander';
import { resolve } from 'node:path';
import { UsageError } from '../errors.js';
import { MANAGERS, type Fleet, type Host, type Manager } from '../inventory/model.js';
import type { Playbook } from '../playbook/playbook.js';
import type { AnsibleHost } from '../render/ansible-project.js';
import type { CommandResult, GlobalOptions, Io } from './context.js';
import { addRunOptions } from './run-options.js';

interface ExportOptions {
  readonly hosts?: string;
  readonly out?: string;
  readonly playbook?: string;
}

export function registerExport(program: Command, io: Io, done: (r: CommandResult) => void): void {
  const group = program
    .command('export')
    .description('hand the deployment over to another tool: export ansible writes an Ansible/AWX project');
  addRunOptions(
    group
      .command('ansible')
      .description(
        "write an Ansible project (inventory, host_vars, playbook, role in collection ibfleet.routing) that installs ibfleet's files and runs its routing script, as deploy does",
      )
      .option('--hosts <set>', 'hosts to export: 16,34 16-20 memserver34 @cpu pair:alice all')
      .option('--out <dir>', 'the project directory to write (created if missing)')
      .option('--playbook <file>', 'playbook to render (default: the built-in dual-ib-routing)'),
  ).action(async (opts: ExportOptions, cmd: Command) => {
    if (opts.hosts === undefined)
      throw new UsageError('export ansible writes a project for chosen hosts, so it needs --hosts (e.g. --hosts all)');
    if (opts.out === undefined || opts.out === '')
      throw new UsageError(
        'export ansible needs --out DIR, the project directory to write (an empty name would write into the current directory)',
      );
    done({
      verdict: await exportAnsible(io, cmd, opts as Required<Pick<ExportOptions, 'hosts' | 'out'>> & ExportOptions),
    });
  });
}

async function exportAnsible(
  io: Io,
  cmd: Command,
  opts: Required<Pick<ExportOptions, 'hosts' | 'out'>> & ExportOptions,
): Promise<CommandResult['verdict']> {
  const [
    { parseGlobals, readFleet, readPlaybook, writeJson },
    { parseHostSelection },
    project,
    { resolveTargets },
    { checkReplaceable, replaceTree },
  ] = await Promise.all([
    import('./context.js'),
    import('../inventory/select.js'),
    import('../render/ansible-project.js'),
    import('../runner/ssh-transport.js'),
    import('./out-dir.js'),
  ]);
  const globals = parseGlobals(cmd.optsWithGlobals(), io);
  const fleet = await readFleet(globals, io);
  const playbook = await readPlaybook(opts.playbook, io);
  const ids = new Set(parseHostSelection(opts.hosts, fleet));
  const hosts = fleet.hosts.filter((h) => ids.has(h.id));
  refuseNative(project.exportRefusal, playbook, hosts);
  // Before any host is asked: a directory that is neither new, empty nor an earlier export is refused.
  await checkReplaceable(opts.out, io.cwd, 'export ansible --out', project.PROJECT_TREE);
  const managers = await managersOf(io, cmd, globals, { fleet, playbook }, hosts);
  if ('failed' in managers) {
    io.stderr.write(`export ansible: nothing written: ${managers.failed.join('; ')}\n`);
    return 'failed';
  }
  const targets = resolveTargets(fleet, hosts, io.env);
  const entries: AnsibleHost[] = hosts.map((host) => {
    const t = targets.get(host.id)!;
    // The inventory's own identity is passed on; otherwise ssh's configuration decides, as it would for ibfleet.
    const identityFile = (host.identityFile ?? fleet.ssh.identityFile) !== undefined ? t.identityFiles[0] : undefined;
    return {
      host,
      manager: managers.byHost.get(host.id)!,
      target: {
        address: t.hostName,
        port: t.port,
        user: t.user,
        become: t.sudo,
        identityFile,
        identitiesOnly: t.identitiesOnly || identityFile !== undefined,
        jumps: t.jumps.map((j) => `${j.user}@${j.hostName}:${j.port}`),
      },
    };
  });
  const knownHosts = globals.knownHosts ? resolve(io.cwd, globals.knownHosts) : fleet.ssh.knownHosts;
  const files = project.renderAnsibleProject({
    fleet,
    playbook,
    hosts: entries,
    ssh: { knownHosts, config: fleet.ssh.config, acceptNew: globals.acceptNew },
  });
  const written = await replaceTree(
    opts.out,
    io.cwd,
    files.map((f) => ({ relative: f.relative, content: f.content, mode: f.mode })),
    'export ansible --out',
    project.PROJECT_TREE,
  );
  const dir = resolve(io.cwd, opts.out);
  const summary = entries.map((e) => ({
    id: e.host.id,
    name: e.host.name,
    manager: e.manager,
    address: e.target.address,
  }));
  if (globals.json) writeJson(io, { command: 'export', ok: true, out: dir, hosts: summary, written });
  else io.stdout.write(exportText(dir, entries, written.length));
  return 'ok';
}

function refuseNative(
  refusal: (playbook: Playbook, hosts: readonly Pick<AnsibleHost, 'host' | 'manager'>[]) => string | undefined,
  playbook: Playbook,
  hosts: readonly Host[],
): void {
  // Every manager a host may turn out to run: an auto host may be any of them.
  const candidates = hosts.flatMap((host) =>
    (host.manager === 'auto' ? MANAGERS : [host.manager]).map((manager) => ({ host, manager })),
  );
  const why = refusal(playbook, candidates);
  if (why) throw new UsageError(`export ansible: ${why}`);
}

/** Each host's manager: the inventory's, or — for `manager: auto` — what a read-only probe of the host shows (as status detects it). */
async function managersOf(
  io: Io,
  cmd: Command,
  globals: GlobalOptions,
  { fleet, playbook }: { fleet: Fleet; playbook: Playbook },
  hosts: readonly Host[],
): Promise<{ byHost: Map<number, Manager> } | { failed: string[] }> {
  const byHost = new Map<number, Manager>(
    hosts.flatMap((h) => (h.manager === 'auto' ? [] : [[h.id, h.manager] as const])),
  );
  const auto = hosts.filter((h) => h.manager === 'auto');
  if (auto.length === 0) return { byHost };
  const [{ buildTransport }, { runHosts }, { statusHost }] = await Promise.all([
    import('./fleet-run.js'),
    import('../runner/fanout.js'),
    import('../runner/host-workflows.js'),
  ]);
  const interrupt = io.interruptSignal();
  const transport = await buildTransport(io, globals, fleet, cmd.optsWithGlobals().askSudoPass === true, interrupt);
  io.stderr.write(
    `export ansible: asking ${auto.map((h) => h.id).join(',')} which network manager runs (manager: auto; read-only)\n`,
  );
  const results = await runHosts(
    auto,
    { concurrency: globals.concurrency, timeoutMs: globals.timeout * 1000, interrupt, events: {} },
    statusHost({ fleet, playbook, transport }),
  );
  const failed: string[] = [];
  for (const r of results) {
    if (r.manager) byHost.set(r.host.id, r.manager);
    else
      failed.push(
        `cannot tell the network manager of ${r.host.id} (${r.host.name}): ${r.error?.message ?? (r.reasons.join('; ') || r.status)}; set manager: for it in the inventory`,
      );
  }
  return failed.length ? { failed } : { byHost };
}

function exportText(dir: string, entries: readonly AnsibleHost[], files: number): string {
  const hosts = entries.map((e) => `${e.host.id} ${e.manager}`).join(', ');
  const run = `ansible-playbook -i ${dir}/inventory.yml ${dir}/site.yml`;
  return [
    `export ansible: ${entries.length} host${entries.length === 1 ? '' : 's'} (${hosts}) → ${dir} (${files} files)`,
    `  ${run}                   deploy, as ibfleet deploy does`,
    `  ${run} --check --diff    what would change; changes nothing`,
    '',
  ].join('\n');
}
