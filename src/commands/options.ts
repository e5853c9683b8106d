/**
 * How every command reads its own options: one zod schema per command, written beside the command,
 * that checks each value and the combinations and says what is wrong in the option's words. A
 * failure is a usage error (exit 2) before any file is read or any host contacted. zod loads only
 * when a command runs, never for `--help`: this module imports it as a type alone.
 */
import type * as z from 'zod';
import type { decimalInteger, optionBuilders } from './context.js';

/** What a schema is built from. */
export interface OptionTools {
  /** The zod builders option schemas use (context.ts's optionBuilders says why not all of zod). */
  readonly z: typeof optionBuilders;
  /** Whole numbers as the global options read them: plain decimal (not `0x10`, `1e1`, `+17`). */
  readonly decimalInteger: typeof decimalInteger;
}

/** A command's options schema, built when the command runs (async where it needs more modules). */
export type OptionsSchema<T extends z.ZodType> = (tools: OptionTools) => T | Promise<T>;

/** The command's options, checked; `raw` is what commander parsed (plus what the command adds). */
export async function readOptions<T extends z.ZodType>(schema: OptionsSchema<T>, raw: unknown): Promise<z.infer<T>> {
  const { decimalInteger, optionBuilders, parseOptions } = await import('./context.js');
  return parseOptions(await schema({ z: optionBuilders, decimalInteger }), raw);
}
