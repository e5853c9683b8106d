import { createHmac } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import {
  checkHostKey,
  fingerprint,
  knownHostsName,
  knownKeyTypes,
  parseKnownHosts,
  patternsMatch,
} from '../../src/runner/known-hosts.js';

/** An SSH public key blob of `type` with arbitrary key bytes. */
function blob(type: string, fill: number): Buffer {
  const name = Buffer.from(type);
  const len = Buffer.alloc(4);
  len.writeUInt32BE(name.length);
  return Buffer.concat([len, name, Buffer.alloc(32, fill)]);
}

function hashed(name: string, salt = Buffer.alloc(20, 7)): string {
  return `|1|${salt.toString('base64')}|${createHmac('sha1', salt).update(name).digest('base64')}`;
}

const ed = blob('ssh-ed25519', 1);
const edOther = blob('ssh-ed25519', 2);
const rsa = blob('ssh-rsa', 3);
const line = (patterns: string, key: Buffer, marker = '') =>
  `${marker}${marker ? ' ' : ''}${patterns} ${key.subarray(4, 4 + key.readUInt32BE(0)).toString()} ${key.toString('base64')}`;

describe('known_hosts', () => {
  it.each([
    ['plain name', '198.18.0.34', '198.18.0.34', true],
    ['comma list', 'memserver34,198.18.0.34', '198.18.0.34', true],
    ['wildcard', '198.18.0.*', '198.18.0.34', true],
    ['question mark', '198.18.0.3?', '198.18.0.34', true],
    ['negation wins', '198.18.0.*,!198.18.0.34', '198.18.0.34', false],
    ['case-insensitive names', 'MemServer34', 'memserver34', true],
    ['other host', '198.18.0.16', '198.18.0.34', false],
    ['non-default port form', '[198.18.0.34]:2222', '[198.18.0.34]:2222', true],
    ['port 22 entry does not match another port', '198.18.0.34', '[198.18.0.34]:2222', false],
    ['hashed entry', hashed('198.18.0.34'), '198.18.0.34', true],
    ['hashed entry of another host', hashed('198.18.0.16'), '198.18.0.34', false],
  ])('pattern %s', (_, patterns, name, expected) => {
    expect(patternsMatch(patterns, name)).toBe(expected);
  });

  it('looks hosts up as OpenSSH does: host on 22, [host]:port otherwise', () => {
    expect(knownHostsName('10.0.0.1', 22)).toBe('10.0.0.1');
    expect(knownHostsName('10.0.0.1', 2222)).toBe('[10.0.0.1]:2222');
  });

  it('skips comments, blank and malformed lines and keeps line numbers', () => {
    const entries = parseKnownHosts(['# comment', '', 'garbage', line('198.18.0.34', ed)].join('\n'));
    expect(entries).toHaveLength(1);
    expect(entries[0]!.line).toBe(4);
    expect(entries[0]!.keyType).toBe('ssh-ed25519');
  });

  it.each([
    ['known key', [line('198.18.0.34', ed)], ed, { kind: 'known', line: 1 }],
    ['known through a hashed entry', [line(hashed('198.18.0.34'), ed)], ed, { kind: 'known', line: 1 }],
    ['no entry at all', [line('198.18.0.16', ed)], ed, { kind: 'unknown' }],
    ['same type, other key: changed', ['# x', line('198.18.0.34', edOther)], ed, { kind: 'changed', lines: [2] }],
    ['only other key types known', [line('198.18.0.34', rsa)], ed, { kind: 'other-types', knownTypes: ['ssh-rsa'] }],
    ['revoked key', [line('*', ed, '@revoked'), line('198.18.0.34', ed)], ed, { kind: 'revoked', line: 1 }],
    ['a CA line is not a host key', [line('198.18.0.34', ed, '@cert-authority')], ed, { kind: 'unknown' }],
  ])('verdict: %s', (_, lines, presented, verdict) => {
    expect(checkHostKey(parseKnownHosts(lines.join('\n')), '198.18.0.34', presented)).toEqual(verdict);
  });

  it('lists the key types known for a host, to negotiate those first', () => {
    const entries = parseKnownHosts(
      [line('198.18.0.34', rsa), line('198.18.0.34', ed), line('198.18.0.16', blob('ecdsa-sha2-nistp256', 4))].join(
        '\n',
      ),
    );
    expect(knownKeyTypes(entries, '198.18.0.34')).toEqual(['ssh-rsa', 'ssh-ed25519']);
  });

  it('prints fingerprints like ssh-keygen -l', () => {
    expect(fingerprint(ed)).toMatch(/^SHA256:[A-Za-z0-9+/]{43}$/);
  });
});

describe("the transport's known_hosts store", () => {
  it('finds for a name exactly the lines a scan of every line finds, in file order', async () => {
    const { mkdtempSync, writeFileSync, rmSync } = await import('node:fs');
    const { tmpdir } = await import('node:os');
    const { join } = await import('node:path');
    const { KnownHostsStore } = await import('../../src/runner/known-hosts-store.js');
    const dir = mkdtempSync(join(tmpdir(), 'ibfleet-kh-'));
    try {
      const file = join(dir, 'known_hosts');
      const text = [
        line('198.18.0.34', ed),
        line(hashed('198.18.0.34'), rsa),
        line('Memserver34,198.18.0.34', edOther),
        line('198.18.0.*,!198.18.0.16', ed),
        line('198.18.0.16', rsa),
        line('*', edOther, '@revoked'),
        line('[198.18.0.34]:2222', ed),
        line('198.18.0.3?', rsa),
      ].join('\n');
      writeFileSync(file, `${text}\n`);
      const store = new KnownHostsStore(file);
      await store.load();
      const entries = parseKnownHosts(text);
      for (const name of [
        '198.18.0.34',
        'memserver34',
        '198.18.0.16',
        '198.18.0.35',
        '[198.18.0.34]:2222',
        'elsewhere',
      ]) {
        const scan = entries.filter((e) => e.marker === 'revoked' || patternsMatch(e.patterns, name));
        expect(
          store.for(name).map((e) => e.line),
          name,
        ).toEqual(scan.map((e) => e.line));
        expect(checkHostKey(store.for(name), name, ed)).toEqual(checkHostKey(entries, name, ed));
      }
      expect(store.for('198.18.0.34').map((e) => e.line)).toEqual([1, 2, 3, 4, 6, 8]);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
