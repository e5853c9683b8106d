/** Options shared by the commands that contact hosts. Light on purpose: loaded for every `--help`. */
import type { Command } from 'commander';

export function addRunOptions(command: Command): Command {
  return command.option(
    '-K, --ask-sudo-pass',
    'ask once for the sudo password (hidden) and send it on stdin to hosts whose sudo asks',
  );
}

/** The one message for a command that needs --hosts and was given none. */
export function hostsRequired(command: string): string {
  const why = command === 'render' ? 'renders files for chosen hosts' : 'changes hosts';
  return `${command} ${why}, so it needs --hosts (e.g. --hosts 16,34, --hosts pair:alice or --hosts all)`;
}
