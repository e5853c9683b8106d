/** `ibfleet render --hosts S [--out DIR]`: the exact files each host would get; no SSH. */
import type { Command } from 'commander';
import { resolve } from 'node:path';
import { formatMode } from '../script/rendered-file.js';
import type { HostRender } from '../render/host-render.js';
import type { CommandResult, Io } from './context.js';
import { readOptions, type OptionTools } from './options.js';
import { addRunOptions, hostsRequired } from './run-options.js';

const renderOptions = ({ z }: OptionTools) =>
  z
    .object({
      hosts: z.string({ error: hostsRequired('render') }),
      playbook: z.string().optional(),
      // An empty name resolves to the working directory: a slip (an unset variable) would scatter host trees there.
      out: z
        .string()
        .min(1, {
          error:
            'render --out needs a directory name: an empty one would write into the current directory (say --out . if that is what you mean)',
        })
        .optional(),
      diff: z.boolean().default(false),
      askSudoPass: z.boolean().default(false),
    })
    .refine((o) => !(o.diff && o.out !== undefined), {
      error: '--diff compares with the hosts; --out writes files here: give one',
    });

export function registerRender(program: Command, io: Io, done: (r: CommandResult) => void): void {
  addRunOptions(
    program
      .command('render')
      .description('print (or write under --out) the exact files each host would receive; no SSH')
      .option('--hosts <set>', 'hosts to render: 16,34 16-20 memserver34 @cpu pair:alice all')
      .option('--playbook <file>', 'playbook to render (default: the built-in dual-ib-routing)')
      .option('--out <dir>', 'write DIR/<host name>/<remote path> instead of printing')
      .option(
        '--diff',
        'compare with the hosts instead (read-only SSH, as status --diff): each file that differs as a unified diff',
      ),
  ).action(async (raw: unknown, cmd: Command) => {
    const opts = await readOptions(renderOptions, raw);
    if (opts.diff) {
      // The files a host would get, against what it has: the manager is known only by asking the host.
      const [{ readPlaybook }, { prepareRun, runPerHost }, { statusHost }] = await Promise.all([
        import('./context.js'),
        import('./fleet-run.js'),
        import('../runner/host-workflows.js'),
      ]);
      const playbook = await readPlaybook(opts.playbook, io);
      const run = await prepareRun(io, cmd, { selection: opts.hosts, askSudoPass: opts.askSudoPass });
      done({
        verdict: await runPerHost(
          io,
          run,
          { command: 'render', inventory: run.globals.inventory, playbook: playbook.name, diff: true },
          statusHost({ fleet: run.fleet, playbook, transport: run.transport }, { diff: true }),
        ),
      });
      return;
    }
    const [
      { parseGlobals, readFleet, readPlaybook, writeJson },
      { parseHostSelection },
      { renderForDisplay },
      { formatRenderText, renderJson },
    ] = await Promise.all([
      import('./context.js'),
      import('../inventory/select.js'),
      import('../render/host-render.js'),
      import('../ui/text/render.js'),
    ]);
    const globals = parseGlobals(cmd.optsWithGlobals(), io);
    const fleet = await readFleet(globals, io);
    const playbook = await readPlaybook(opts.playbook, io);
    const ids = new Set(parseHostSelection(opts.hosts, fleet));
    const renders = fleet.hosts.filter((h) => ids.has(h.id)).map((h) => renderForDisplay(h, fleet, playbook));
    if (opts.out !== undefined) {
      const written = await writeRenders(opts.out, io.cwd, renders);
      if (globals.json) writeJson(io, { ...renderJson(renders), out: resolve(io.cwd, opts.out), written });
      else io.stdout.write(written.map((w) => `wrote ${w}\n`).join(''));
    } else if (globals.json) writeJson(io, renderJson(renders));
    else io.stdout.write(formatRenderText(renders));
    done({ verdict: 'ok' });
  });
}

async function writeRenders(out: string, cwd: string, renders: readonly HostRender[]): Promise<string[]> {
  const { writeTree } = await import('./out-dir.js');
  const files = renders.flatMap((r) =>
    r.files.map((f) => ({ relative: `${r.host.name}${f.path}`, content: f.content, mode: f.mode })),
  );
  const written = await writeTree(out, cwd, files);
  return written.map((path, i) => `${path} (${formatMode(files[i]!.mode)})`);
}
