/**
 * The known_hosts file of a run: loaded once, looked up by host name (hashed lines included),
 * appended to with --accept-new, and the host-key decision with the message that goes with it.
 * The matching rules themselves are pure and live in known-hosts.ts.
 */
import { appendFile, mkdir, readFile } from 'node:fs/promises';
import { dirname } from 'node:path';
import { shellQuote } from '../script/shell.js';
import {
  checkHostKey,
  fingerprint,
  formatKnownHostsLine,
  keyTypeOf,
  parseKnownHosts,
  patternsMatch,
  type KnownHostEntry,
} from './known-hosts.js';

/** Accept (and, with `record`, add the key to the file first, noting it so), or refuse with the reason. */
export type HostKeyDecision =
  { readonly accept: true; readonly record?: string } | { readonly accept: false; readonly message: string };

export class KnownHostsStore {
  private entries: KnownHostEntry[] = [];
  private appending: Promise<void> = Promise.resolve();
  /**
   * Entries that can concern one host name: those whose patterns match it, and every @revoked key
   * (a revoked key is refused whatever name it comes under). Matching a name against every line —
   * an HMAC per hashed line — once per lookup, twice per connection, for hundreds of hosts against
   * a known_hosts of hundreds of lines adds up: each name is matched once per run, and lines that
   * name hosts literally (what ssh-keyscan and `lab up` write) are found by name, not by a scan.
   */
  private readonly relevant = new Map<string, readonly KnownHostEntry[]>();
  private index: { byName: Map<string, number[]>; scanned: number[] } | undefined;
  constructor(readonly file: string) {}

  async load(): Promise<void> {
    try {
      this.entries = parseKnownHosts(await readFile(this.file, 'utf8'));
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
      this.entries = [];
    }
    this.forget();
  }

  get all(): readonly KnownHostEntry[] {
    return this.entries;
  }

  /** A subset of the entries that gives checkHostKey and knownKeyTypes the same answers for `name`. */
  for(name: string): readonly KnownHostEntry[] {
    let found = this.relevant.get(name);
    if (!found) {
      const { byName, scanned } = (this.index ??= this.buildIndex());
      const positions = [
        ...(byName.get(name.toLowerCase()) ?? []),
        ...scanned.filter(
          (i) => this.entries[i]!.marker === 'revoked' || patternsMatch(this.entries[i]!.patterns, name),
        ),
      ];
      found = positions.sort((a, b) => a - b).map((i) => this.entries[i]!);
      this.relevant.set(name, found);
    }
    return found;
  }

  /** Positions of literal-name lines by name; every other line (hashed, wildcards, negations, @revoked) is matched one by one. */
  private buildIndex(): { byName: Map<string, number[]>; scanned: number[] } {
    const byName = new Map<string, number[]>();
    const scanned: number[] = [];
    this.entries.forEach((e, i) => {
      if (e.marker === 'revoked' || e.patterns.startsWith('|') || /[*?!]/.test(e.patterns)) return void scanned.push(i);
      for (const name of new Set(e.patterns.toLowerCase().split(',')))
        byName.set(name, [...(byName.get(name) ?? []), i]);
    });
    return { byName, scanned };
  }

  private forget(): void {
    this.relevant.clear();
    this.index = undefined;
  }

  /** Appends one line; appends are serialised so parallel --accept-new hosts never interleave. */
  record(name: string, key: Buffer): Promise<void> {
    const line = formatKnownHostsLine(name, key);
    this.appending = this.appending.then(async () => {
      await mkdir(dirname(this.file), { recursive: true, mode: 0o700 });
      await appendFile(this.file, `${line}\n`, { mode: 0o600 });
      this.entries.push(...parseKnownHosts(line));
      this.forget();
    });
    return this.appending;
  }

  /**
   * Whether to trust `key` for `name`, as OpenSSH's StrictHostKeyChecking=yes would (accept-new
   * with --accept-new): a known key is accepted; an unknown one is refused, or accepted to be
   * recorded (the note says so); a changed, other-type or revoked key is always refused, and the
   * message says what to do.
   */
  decide(name: string, key: Buffer, acceptNew: boolean): HostKeyDecision {
    const verdict = checkHostKey(this.for(name), name, key);
    const fp = fingerprint(key);
    switch (verdict.kind) {
      case 'known':
        return { accept: true };
      case 'unknown':
        if (!acceptNew) {
          return {
            accept: false,
            message: `host key of ${name} is not in ${this.file} (${keyTypeOf(key)} ${fp}); verify it, then run again with --accept-new or add it with ssh-keyscan`,
          };
        }
        return { accept: true, record: `recorded new host key for ${name} (${keyTypeOf(key)} ${fp}) in ${this.file}` };
      case 'changed':
        return {
          accept: false,
          message: `WARNING: HOST KEY OF ${name} HAS CHANGED (now ${keyTypeOf(key)} ${fp}; ${this.file} line ${verdict.lines.join(', ')}). Someone could be intercepting the connection, or the host was reinstalled. Nothing was done on this host; if the change is expected, remove the old key with: ssh-keygen -R ${shellQuote(name)} -f ${shellQuote(this.file)}`,
        };
      case 'other-types':
        return {
          accept: false,
          message: `${name} presented a ${keyTypeOf(key)} key (${fp}) but ${this.file} only has ${verdict.knownTypes.join(', ')} keys for it; verify and add the new key with ssh-keyscan`,
        };
      case 'revoked':
        return {
          accept: false,
          message: `host key of ${name} is marked @revoked in ${this.file} line ${verdict.line}; refusing to connect`,
        };
    }
  }
}
