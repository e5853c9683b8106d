/** The completion table of a commander program: its visible commands, options and arguments. */
import type { Command } from 'commander';
import type { CommandSpec } from './engine.js';

export function commandSpec(command: Command): CommandSpec {
  const help = command.createHelp();
  return {
    name: command.name(),
    description: firstLine(command.description()),
    options: help.visibleOptions(command).map((o) => ({
      short: o.short,
      long: o.long,
      takesValue: o.required || o.optional,
      description: firstLine(o.description),
    })),
    commands: help
      .visibleCommands(command)
      .filter((c) => c.name() !== 'help')
      .map(commandSpec),
    args: command.registeredArguments.map((a) => a.name()),
  };
}

function firstLine(text: string): string {
  return text.split('\n')[0] ?? '';
}
