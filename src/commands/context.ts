/**
 * What every command gets: its streams and environment (injectable for tests), the global options,
 * and loading an inventory or playbook (reading in src/runner/files.ts, parsing pure).
 */
import { isAbsolute, join, resolve } from 'node:path';
import * as z from 'zod';
import { UsageError } from '../errors.js';
import { loadInventory } from '../inventory/load.js';
import { HOST_OVERRIDES } from '../steps/registry.js';
import type { Fleet } from '../inventory/model.js';
import { startOptimizing } from '../optimizer.js';
import { PACKAGE_ROOT } from '../package-root.js';
import { loadPlaybook, type Playbook } from '../playbook/playbook.js';
import { inventoryFile, readConfigText } from '../runner/files.js';
import type { OutStream } from '../ui/stream.js';
import { jsonText } from '../ui/text/sanitize.js';
import type { RunVerdict } from '../vocabulary.js';

export interface Io {
  readonly stdout: OutStream;
  readonly stderr: OutStream;
  readonly stdin: NodeJS.ReadableStream;
  readonly env: Readonly<Record<string, string | undefined>>;
  readonly cwd: string;
  /**
   * Starts listening for Ctrl-C and returns the signal it aborts. The first Ctrl-C aborts the
   * signal (the run stops starting hosts and lets changes under way finish); a second one exits
   * with 130 at once. Commands that never call this keep Node's default Ctrl-C behaviour.
   */
  interruptSignal(): AbortSignal;
}

/** How a command ended; src/cli.ts alone turns it into the exit code. */
export interface CommandResult {
  readonly verdict: RunVerdict;
}

export const DEFAULT_INVENTORY = 'inventory/fleet.yaml';
export const DEFAULT_PLAYBOOK = 'playbooks/dual-ib-routing.yaml';

/**
 * Numbers on the command line are plain decimal: `Number()` would also read `0x10`, `1e1`, `+17`
 * and ` 16 ` (16, 10, 17, 16), which on a command line are slips, not wishes.
 */
export function decimalInteger(error: string) {
  return z
    .string({ error })
    .regex(/^[0-9]+$/, { error })
    .transform(Number);
}

/** Node's timers hold at most 2^31 - 1 ms; a longer delay silently becomes 1 ms, so it is refused. */
export const MAX_TIMEOUT_SECONDS = Math.floor((2 ** 31 - 1) / 1000);

const timeoutSeconds = z
  .string()
  .regex(/^([0-9]+(\.[0-9]*)?|\.[0-9]+)$/, { error: '--timeout must be a number of seconds, e.g. 60 or 2.5' })
  .transform(Number)
  .refine((s) => s >= 0.001, { error: '--timeout must be at least 0.001 seconds (1 ms)' })
  .refine((s) => s <= MAX_TIMEOUT_SECONDS, {
    error: `--timeout is at most ${MAX_TIMEOUT_SECONDS} seconds (about 24 days, the longest timer Node.js keeps)`,
  });

export const globalOptionsSchema = z.object({
  inventory: z.string().optional(),
  concurrency: decimalInteger('--concurrency must be a whole number')
    .pipe(
      z
        .number()
        .min(1, { error: '--concurrency must be at least 1' })
        .max(1024, { error: '--concurrency is at most 1024' }),
    )
    .default(32),
  timeout: timeoutSeconds.default(60),
  json: z.boolean().default(false),
  knownHosts: z.string().optional(),
  acceptNew: z.boolean().default(false),
  /** --log FILE, or false with --no-log; undefined: a new log in the default directory. */
  log: z.union([z.string().min(1, { error: '--log needs a file name' }), z.literal(false)]).optional(),
});

/**
 * The zod builders the commands' option schemas use (OptionTools), by name. zod's namespace as a
 * value would make the bundle keep and build every export of zod (its JSON-schema converters, ISO
 * formats, locales' index...): ~360 KB more to compile and ~13 ms of CPU in every run.
 */
export const optionBuilders = {
  array: z.array,
  boolean: z.boolean,
  enum: z.enum,
  number: z.number,
  object: z.object,
  string: z.string,
};

export type GlobalOptions = z.infer<typeof globalOptionsSchema> & { readonly inventory: string };

/** Validates options against a schema; a failure names the option and is a usage error (exit 2). */
export function parseOptions<T extends z.ZodType>(schema: T, raw: unknown): z.infer<T> {
  const result = schema.safeParse(raw);
  if (!result.success) throw new UsageError(result.error.issues.map((i) => i.message).join('; '));
  return result.data;
}

export function parseGlobals(raw: Record<string, unknown>, io: Io): GlobalOptions {
  const parsed = parseOptions(globalOptionsSchema, raw);
  return { ...parsed, inventory: parsed.inventory ?? io.env.IBFLEET_INVENTORY ?? DEFAULT_INVENTORY };
}

export async function readFleet(globals: GlobalOptions, io: Io): Promise<Fleet> {
  const file = inventoryFile(globals.inventory, io.cwd);
  const fleet = loadInventory(await file.read(), file.path, file.baseDir, HOST_OVERRIDES);
  startOptimizing();
  return fleet;
}

/** `--playbook` is relative to the working directory; without it, the built-in default ships with ibfleet. */
export async function readPlaybook(path: string | undefined, io: Io): Promise<Playbook> {
  const file = path ?? DEFAULT_PLAYBOOK;
  const location =
    path === undefined ? join(PACKAGE_ROOT, DEFAULT_PLAYBOOK) : isAbsolute(path) ? path : resolve(io.cwd, path);
  const text = await readConfigText(
    location,
    io.cwd,
    'playbook',
    `pass --playbook FILE; the default is ${DEFAULT_PLAYBOOK}`,
  );
  return loadPlaybook(text, file);
}

export function writeJson(io: Io, value: unknown): void {
  io.stdout.write(`${jsonText(value)}\n`);
}
