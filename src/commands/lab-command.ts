/**
 * What every `ibfleet lab …` command shares: how it names its lab (--name, the default lab without
 * it), how a repeatable option collects its values, and how it answers under --json. Light: the
 * global options' module loads only when a command runs.
 */
import type { Command } from 'commander';
import { DEFAULT_LAB_NAME } from '../lab/names.js';
import type { Io } from './context.js';

export const collect = (value: string, previous: string[]) => [...previous, value];

/** Every lab command but list and down names its lab with --name, the default lab without it. */
export const nameOption = ['--name <name>', 'lab name', DEFAULT_LAB_NAME] as const;

/** The global options, and how a lab command answers under --json; loaded when the command runs. */
export async function labOutput(io: Io, cmd: Command) {
  const { parseGlobals, writeJson } = await import('./context.js');
  const globals = parseGlobals(cmd.optsWithGlobals(), io);
  return { json: globals.json, writeJson: (value: unknown) => writeJson(io, value) };
}
