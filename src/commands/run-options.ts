/** Options shared by the commands that contact hosts. Light on purpose: loaded for every `--help`. */
import type { Command } from 'commander';

export function addRunOptions(command: Command): Command {
  return command.option('-K, --ask-sudo-pass', 'ask once for the sudo password (hidden) and send it on stdin to hosts whose sudo asks');
}
