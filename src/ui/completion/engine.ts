/**
 * Shell completion, decided in one place for bash, zsh and fish: the shell hands over the command
 * line up to the cursor (`ibfleet __complete SHELL -- LINE`), and this says what the word under the
 * cursor can become — a command, an option, a `--hosts` value from the inventory the line names, or
 * "complete a file name here". The shells' scripts (scripts.ts) only display the answer. Pure: the
 * inventory and the lab names come from the caller.
 */
import { findCommand, findOption, walkWords, type CommandSpec } from '../../command-line.js';
import type { Fleet } from '../../inventory/model.js';

/** What may stand where the cursor is. */
export type ValueKind =
  'none' | 'files' | 'dirs' | 'hosts' | 'owners' | 'labs' | 'lab-hosts' | 'shells' | 'env-libraries' | 'env-formats';

export interface Candidate {
  readonly value: string;
  readonly description?: string;
}

export type Completion =
  | { readonly kind: 'words'; readonly candidates: readonly Candidate[] }
  /** Let the shell complete a path: `prefix` is the path so far, `before` what precedes it in the word (`--out=`). */
  | { readonly kind: 'files' | 'dirs'; readonly prefix: string; readonly before: string };

export interface CompletionSources {
  /** The fleet of an inventory file named on the line (or undefined: the default); undefined when it cannot be read. */
  fleet(inventory: string | undefined): Fleet | undefined;
  /** The fleet of a running lab, for `lab reboot`. */
  labFleet(name: string): Fleet | undefined;
  labNames(): readonly string[];
}

export const SHELLS = ['bash', 'zsh', 'fish'] as const;

/** What an option's or argument's value is, by where it stands. */
export function valueKind(path: readonly string[], name: string): ValueKind {
  const inLab = path[0] === 'lab';
  switch (name) {
    case '--inventory':
    case '--known-hosts':
    case '--playbook':
      return 'files';
    case '--out':
      return 'dirs';
    case '--hosts':
      // `lab up --hosts` takes any host numbers, not the inventory's.
      return inLab ? 'none' : 'hosts';
    case '--pair':
      return 'owners';
    case '--name':
      return inLab ? 'labs' : 'none';
    case 'shell':
      return 'shells';
    case '--for':
      return path[0] === 'env' ? 'env-libraries' : 'none';
    case '--format':
      return path[0] === 'env' ? 'env-formats' : 'none';
    case 'hosts':
      return inLab ? 'lab-hosts' : 'hosts';
    default:
      return 'none';
  }
}

interface LineState {
  readonly path: readonly string[];
  readonly inventory: string | undefined;
  readonly labName: string;
  /** Whether the line says --name: without it the lab is `default`, which may not be up. */
  readonly labNamed: boolean;
  /** Positional arguments given after the command path. */
  readonly positionals: number;
  /** The option whose value the cursor is on (`--hosts ` or `--hosts=`), if any. */
  readonly valueOf: string | undefined;
  /** The word under the cursor, whole (`--hosts=16,3`), and the part that is the value (`16,3`). */
  readonly word: string;
  readonly value: string;
}

/** Splits the line as a shell would for plain words; quotes around a word are dropped. */
export function splitLine(line: string): string[] {
  const words = line.split(/[ \t]+/).filter((w, i, all) => w !== '' || i === all.length - 1);
  if (words.length === 0) words.push('');
  return words.map((w) => w.replace(/^(['"])(.*)\1$/, '$2').replace(/^['"]/, ''));
}

function readLine(root: CommandSpec, line: string, env: Readonly<Record<string, string | undefined>>): LineState {
  const words = splitLine(line);
  const word = words.pop()!;
  let i = 0;
  // An empty variable is no choice, as for the shell's own use of it.
  let inventory = env.IBFLEET_INVENTORY || undefined;
  // `IBFLEET_INVENTORY=x ibfleet …`: assignments before the command apply to it.
  for (; i < words.length && /^[A-Za-z_][A-Za-z0-9_]*=/.test(words[i]!); i++) {
    if (words[i]!.startsWith('IBFLEET_INVENTORY=')) inventory = words[i]!.slice('IBFLEET_INVENTORY='.length);
  }
  let labName: string | undefined;
  const walked = walkWords(root, words.slice(i + 1), (flag, value, path) => {
    if (flag === '-i' || flag === '--inventory') inventory = value;
    if (flag === '--name' && path[0] === 'lab') labName = value;
  });
  const { path, pending } = walked;
  const base = {
    path,
    inventory,
    labName: labName ?? 'default',
    labNamed: labName !== undefined,
    positionals: walked.positionals.length,
    word,
  };
  if (pending !== undefined) return { ...base, valueOf: pending, value: word };
  const eq = word.startsWith('--') ? word.indexOf('=') : -1;
  if (eq > 0) return { ...base, valueOf: word.slice(0, eq), value: word.slice(eq + 1) };
  return { ...base, valueOf: undefined, value: word };
}

export function complete(
  root: CommandSpec,
  line: string,
  sources: CompletionSources,
  env: Readonly<Record<string, string | undefined>> = {},
): Completion {
  const state = readLine(root, line, env);
  const command = findCommand(root, state.path);
  const words = (candidates: readonly Candidate[]): Completion => ({
    kind: 'words',
    candidates: candidates.filter((c) => c.value.startsWith(state.word)),
  });

  if (state.valueOf !== undefined) {
    const option = findOption(root, state.path, state.valueOf);
    const name = option?.long ?? state.valueOf;
    return valuesFor(valueKind(state.path, name), state, sources, words);
  }
  if (state.word.startsWith('-')) {
    const options = [...command.options, ...(state.path.length > 0 ? root.options : [])];
    const seen = new Set<string>();
    const flags: Candidate[] = [];
    for (const o of options) {
      for (const flag of [o.long, o.short]) {
        if (flag === undefined || seen.has(flag)) continue;
        seen.add(flag);
        flags.push({ value: flag, description: o.description });
      }
    }
    // Short flags only when asked for: `-<TAB>` lists both, `--<TAB>` the long ones.
    return words(state.word.startsWith('--') ? flags.filter((f) => f.value.startsWith('--')) : flags);
  }
  if (command.commands.length > 0 && state.positionals === 0) {
    return words(command.commands.map((c) => ({ value: c.name, description: c.description })));
  }
  const arg = command.args[state.positionals];
  return arg === undefined
    ? { kind: 'words', candidates: [] }
    : valuesFor(valueKind(state.path, arg), state, sources, words);
}

function valuesFor(
  kind: ValueKind,
  state: LineState,
  sources: CompletionSources,
  words: (c: readonly Candidate[]) => Completion,
): Completion {
  // The whole word is replaced by a candidate: keep what stands before the value (`--hosts=`).
  const before = state.word.slice(0, state.word.length - state.value.length);
  const as = (values: readonly Candidate[]) => words(values.map((c) => ({ ...c, value: before + c.value })));
  switch (kind) {
    case 'files':
    case 'dirs':
      return { kind, prefix: state.value, before };
    case 'shells':
      return as([{ value: 'bash' }, { value: 'zsh' }, { value: 'fish' }]);
    case 'env-libraries':
      return as([
        { value: 'nccl', description: 'NCCL_IB_HCA, NCCL_SOCKET_IFNAME, NCCL_IB_GID_INDEX' },
        { value: 'ucx', description: 'UCX_NET_DEVICES, UCX_IB_GID_INDEX' },
        { value: 'mpi', description: "Open MPI's TCP interfaces" },
      ]);
    case 'env-formats':
      return as([
        { value: 'sh', description: 'export lines to source' },
        { value: 'json', description: 'one JSON document' },
      ]);
    case 'labs':
      return as(sources.labNames().map((value) => ({ value, description: 'lab' })));
    case 'owners': {
      const fleet = sources.fleet(state.inventory);
      return as((fleet?.pairs ?? []).map((p) => ({ value: p.owner, description: `pair ${p.cpu},${p.mem}` })));
    }
    case 'hosts': {
      const fleet = sources.fleet(state.inventory);
      return as(fleet ? hostSetCandidates(fleet, state.value) : []);
    }
    case 'lab-hosts':
      return as(labHostCandidates(state, sources));
    default:
      return { kind: 'words', candidates: [] };
  }
}

/**
 * The hosts of the lab the line names. Without --name, when the default lab is not up, the hosts
 * of the labs that are: `lab reboot 16 --name nc4` is typed host first, and the --name that
 * follows is not on the line yet. Several labs: each value once, described with its labs' names.
 */
function labHostCandidates(state: LineState, sources: CompletionSources): Candidate[] {
  const named = sources.labFleet(state.labName);
  if (named !== undefined || state.labNamed) return named ? hostSetCandidates(named, state.value) : [];
  const labs = sources.labNames().flatMap((name) => {
    const fleet = sources.labFleet(name);
    return fleet ? [{ name, fleet }] : [];
  });
  if (labs.length === 1)
    return hostSetCandidates(labs[0]!.fleet, state.value).map((c) => ({
      ...c,
      description: `lab ${labs[0]!.name}: ${c.description ?? ''}`,
    }));
  const merged = new Map<string, string[]>();
  for (const { name, fleet } of labs) {
    for (const c of hostSetCandidates(fleet, state.value)) {
      if (c.value === 'all') continue; // all of which lab?
      merged.set(c.value, [...(merged.get(c.value) ?? []), `${name}: ${c.description ?? ''}`]);
    }
  }
  return [...merged].map(([value, where]) => ({ value, description: `lab ${where.join(', ')}` }));
}

/** Every single host selection an inventory offers: all, numbers, names, @roles, pair:owners. */
export function hostSelections(fleet: Fleet): Candidate[] {
  const roles = [...new Set(fleet.hosts.map((h) => h.role).filter((r): r is string => r !== undefined))].sort();
  return [
    { value: 'all', description: `all ${fleet.hosts.length} hosts` },
    ...fleet.hosts.map((h) => ({ value: String(h.id), description: h.name })),
    ...fleet.hosts.map((h) => ({ value: h.name, description: `host ${h.id}` })),
    ...roles.map((r) => ({ value: `@${r}`, description: `role ${r}` })),
    ...fleet.pairs.map((p) => ({ value: `pair:${p.owner}`, description: `${p.cpu},${p.mem}` })),
  ];
}

/**
 * A comma list is completed item by item: `16,me` → `16,memserver34`. Hosts already given, by
 * number or by name, are not offered again.
 */
export function hostSetCandidates(fleet: Fleet, value: string): Candidate[] {
  const comma = value.lastIndexOf(',');
  const head = value.slice(0, comma + 1);
  const given = new Set(head.split(',').filter(Boolean));
  for (const h of fleet.hosts) {
    if (given.has(String(h.id)) || given.has(h.name)) given.add(String(h.id)).add(h.name);
  }
  return hostSelections(fleet)
    .filter((c) => !given.has(c.value) && !(head !== '' && c.value === 'all'))
    .map((c) => ({ ...c, value: head + c.value }));
}
