/**
 * How every command reads its own options: one zod schema per command, written beside the command,
 * that checks each value and the combinations and says what is wrong in the option's words. A
 * failure is a usage error (exit 2) before any file is read or any host contacted. zod loads only
 * when a command runs, never for `--help`: this module imports it as a type alone.
 */
import type { z } from 'zod';
import type { decimalInteger } from './context.js';

/** What a schema is built from. */
export interface OptionTools {
  readonly z: typeof z;
  /** Whole numbers as the global options read them: plain decimal (not `0x10`, `1e1`, `+17`). */
  readonly decimalInteger: typeof decimalInteger;
}

/** A command's options schema, built when the command runs (async where it needs more modules). */
export type OptionsSchema<T extends z.ZodType> = (tools: OptionTools) => T | Promise<T>;

/** The command's options, checked; `raw` is what commander parsed (plus what the command adds). */
export async function readOptions<T extends z.ZodType>(schema: OptionsSchema<T>, raw: unknown): Promise<z.infer<T>> {
  const [{ z }, { decimalInteger, parseOptions }] = await Promise.all([import('zod'), import('./context.js')]);
  return parseOptions(await schema({ z, decimalInteger }), raw);
}
