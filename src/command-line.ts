/**
 * The command table as data, taken from commander's own definitions, and how the words of a
 * command line walk it: which command they name, which words are option values and which are
 * positionals. Shell completion (src/ui/completion) and the error report (src/cli.ts) both read
 * command lines this way, so an option added to a command is known to both without a list kept
 * by hand. Pure.
 */
import type { Command } from 'commander';

export interface OptionSpec {
  readonly short: string | undefined;
  readonly long: string | undefined;
  readonly takesValue: boolean;
  readonly description: string;
}

export interface CommandSpec {
  readonly name: string;
  readonly description: string;
  readonly options: readonly OptionSpec[];
  readonly commands: readonly CommandSpec[];
  /** Names of the positional arguments, in order. */
  readonly args: readonly string[];
}

/** The table of a commander program: its visible commands, options and arguments. */
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

export function findCommand(root: CommandSpec, path: readonly string[]): CommandSpec {
  let command = root;
  for (const name of path) command = command.commands.find((c) => c.name === name) ?? command;
  return command;
}

export function findOption(root: CommandSpec, path: readonly string[], flag: string): OptionSpec | undefined {
  const own = findCommand(root, path).options;
  const matches = (o: OptionSpec) => o.long === flag || o.short === flag;
  // Options of the program are accepted after a command too (commander's default).
  return own.find(matches) ?? (path.length > 0 ? root.options.find(matches) : undefined);
}

/** Where the words of a command line (after the program's name) lead. */
export interface WalkedLine {
  /** The command they name, e.g. ['lab', 'up']; empty: the program itself (or an unknown command). */
  readonly path: readonly string[];
  /** The words that are neither options nor option values, in order. */
  readonly positionals: readonly string[];
  /** The option given last whose value has not come yet (`--hosts` at the end of the line). */
  readonly pending: string | undefined;
}

/**
 * Walks the words as commander parses them: an option that takes a value takes the next word, or
 * what follows `=` (`--hosts=16`) or its short flag (`-c32`); a word that names a subcommand of the
 * command so far, before any positional, goes down into it; after `--` every word is a positional.
 * `onValue` hears each option's value with the command path it was given at.
 */
export function walkWords(
  root: CommandSpec,
  words: readonly string[],
  onValue: (flag: string, value: string, path: readonly string[]) => void = () => undefined,
): WalkedLine {
  const path: string[] = [];
  const positionals: string[] = [];
  let pending: string | undefined;
  let rest = false;
  for (const word of words) {
    if (pending !== undefined) {
      onValue(pending, word, path);
      pending = undefined;
    } else if (rest || word === '-' || !word.startsWith('-')) {
      const sub =
        rest || positionals.length > 0 ? undefined : findCommand(root, path).commands.find((c) => c.name === word);
      if (sub) path.push(word);
      else positionals.push(word);
    } else if (word === '--') {
      rest = true;
    } else if (word.startsWith('--') && word.includes('=')) {
      onValue(word.slice(0, word.indexOf('=')), word.slice(word.indexOf('=') + 1), path);
    } else if (!word.startsWith('--') && word.length > 2 && findOption(root, path, word.slice(0, 2))?.takesValue) {
      onValue(word.slice(0, 2), word.slice(2), path);
    } else if (findOption(root, path, word)?.takesValue) {
      pending = word;
    }
  }
  return { path, positionals, pending };
}
