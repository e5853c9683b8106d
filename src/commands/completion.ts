/**
 * `ibfleet completion bash|zsh|fish`: the shell's completion script; and the hidden `__complete`
 * those scripts call on each TAB with the command line, answered by src/ui/completion/engine.ts.
 */
import { Argument, type Command } from 'commander';
import type { Fleet } from '../inventory/model.js';
import type { CommandResult, Io } from './context.js';

const SHELLS = ['bash', 'zsh', 'fish'];

export function registerCompletion(program: Command, io: Io, done: (r: CommandResult) => void): void {
  program
    .command('completion')
    .description('print the shell completion script: commands, options, and --hosts values from the inventory')
    .addArgument(new Argument('<shell>', 'bash, zsh or fish').choices(SHELLS))
    .addHelpText(
      'after',
      '\nbash: source <(ibfleet completion bash)    zsh: source <(ibfleet completion zsh)    fish: ibfleet completion fish | source',
    )
    .action(async (shell: string) => {
      const [scripts, { VERSION }] = await Promise.all([
        import('../ui/completion/scripts.js'),
        import('../version.js'),
      ]);
      const render = {
        bash: scripts.renderBashCompletion,
        zsh: scripts.renderZshCompletion,
        fish: scripts.renderFishCompletion,
      }[shell as 'bash' | 'zsh' | 'fish'];
      io.stdout.write(render(VERSION));
      done({ verdict: 'ok' });
    });

  program
    .command('__complete', { hidden: true })
    .argument('<shell>')
    .argument('[line]', 'the command line up to the cursor', '')
    .action(async (_shell: string, line: string) => {
      const [{ complete }, { commandSpec }, { formatCompletion }] = await Promise.all([
        import('../ui/completion/engine.js'),
        import('../command-line.js'),
        import('../ui/completion/scripts.js'),
      ]);
      const sources = await completionSources(io);
      io.stdout.write(formatCompletion(complete(commandSpec(program), line, sources, io.env)));
      done({ verdict: 'ok' });
    });
}

/** Inventories and labs as completion sees them: anything unreadable or invalid just offers nothing. */
async function completionSources(io: Io) {
  const [
    { readFileSync, readdirSync },
    { dirname, resolve },
    { loadInventory },
    { DEFAULT_INVENTORY },
    { LAB_ROOT, isLabName, labPaths },
    { HOST_OVERRIDES },
  ] = await Promise.all([
    import('node:fs'),
    import('node:path'),
    import('../inventory/load.js'),
    import('./context.js'),
    import('../lab/names.js'),
    import('../steps/registry.js'),
  ]);
  const load = (file: string): Fleet | undefined => {
    try {
      return loadInventory(readFileSync(resolve(io.cwd, file), 'utf8'), file, dirname(file), HOST_OVERRIDES);
    } catch {
      return undefined;
    }
  };
  return {
    fleet: (inventory: string | undefined) => load(inventory ?? DEFAULT_INVENTORY),
    labFleet: (name: string) => load(labPaths(name).inventory),
    labNames: () => {
      try {
        return readdirSync(LAB_ROOT).filter(isLabName).sort();
      } catch {
        return [];
      }
    },
  };
}
