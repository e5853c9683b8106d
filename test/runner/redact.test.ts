/**
 * The -K password taken out of a host's text as it arrives (src/runner/redact.ts): whole texts,
 * and streams cut into chunks at every possible point — a split never lets part of it through.
 */
import { describe, expect, it } from 'vitest';
import { REDACTED, redactText, SecretFilter } from '../../src/runner/redact.js';

const PW = 'S3cretPW';

describe('redactText', () => {
  it.each([
    ['no secret in it', 'all is well', [PW], 'all is well'],
    ['once', `pw is ${PW} here`, [PW], `pw is ${REDACTED} here`],
    ['twice, back to back', `${PW}${PW}`, [PW], `${REDACTED}${REDACTED}`],
    ['at both ends', `${PW} and ${PW}`, [PW], `${REDACTED} and ${REDACTED}`],
    ['a prefix alone is not the secret', 'S3cret', [PW], 'S3cret'],
    ['case matters (it is the password as typed)', 's3cretpw', [PW], 's3cretpw'],
    ['no secrets known yet', `pw is ${PW}`, [], `pw is ${PW}`],
    ['the empty password is no secret', 'anything', [''], 'anything'],
    [
      'a secret inside itself (aaa in aaaa): left to right, whole matches',
      'aaaaaaa',
      ['aaa'],
      `${REDACTED}${REDACTED}a`,
    ],
    ['non-ASCII', 'pw: pässwörd!', ['pässwörd'], `pw: ${REDACTED}!`],
  ])('%s', (_, text, secrets, expected) => expect(redactText(text, secrets)).toBe(expected));
});

/** Feeds `text` to a filter in the chunks `cuts` make; returns all it let through. */
function stream(text: string, cuts: readonly number[], secrets: readonly string[] = [PW]): string {
  const filter = new SecretFilter(() => secrets);
  let out = '';
  let from = 0;
  for (const cut of [...cuts, text.length]) {
    out += filter.push(text.slice(from, cut));
    from = cut;
  }
  return out + filter.end();
}

describe('SecretFilter: a password split across chunks never leaks, at any split point', () => {
  const texts = [
    ['the password echoed', `pw is ${PW} here\n`, `pw is ${REDACTED} here\n`],
    ['at the very start', `${PW}\n`, `${REDACTED}\n`],
    ['at the very end, no newline', `pw is ${PW}`, `pw is ${REDACTED}`],
    ['twice', `${PW} ${PW}\n`, `${REDACTED} ${REDACTED}\n`],
    ['after a false start (a prefix, then the whole)', `S3cr S3cret${PW}!\n`, `S3cr S3cret${REDACTED}!\n`],
    ['a false start that overlaps the match (S3cS3cretPW)', `S3c${PW}`, `S3c${REDACTED}`],
  ] as const;

  describe.each(texts)('%s', (_, text, expected) => {
    it.each(Array.from({ length: text.length + 1 }, (__, i) => i))('cut at %i', (cut) => {
      expect(stream(text, [cut])).toBe(expected);
    });

    it('cut at every pair of points', () => {
      for (let a = 0; a <= text.length; a++)
        for (let b = a; b <= text.length; b++) expect(stream(text, [a, b]), `cuts ${a}, ${b}`).toBe(expected);
    });

    it('one character at a time', () =>
      expect(
        stream(
          text,
          Array.from({ length: text.length }, (__, i) => i),
        ),
      ).toBe(expected));
  });

  it('what it lets through never holds the password, nor a prefix of it that the next chunk completes', () => {
    const filter = new SecretFilter(() => [PW]);
    expect(filter.push('pw is S3cr')).toBe('pw is ');
    expect(filter.push('etP')).toBe('');
    expect(filter.push('W here')).toBe(`${REDACTED} here`);
    expect(filter.end()).toBe('');
  });

  it('a held tail that turns out not to be the password is let go with the next chunk, or at the end', () => {
    const filter = new SecretFilter(() => [PW]);
    expect(filter.push('S3c')).toBe('');
    expect(filter.push('ond')).toBe('S3cond');
    expect(filter.push('S3')).toBe('');
    expect(filter.end()).toBe('S3');
  });

  it('asks for the secrets at every chunk: a password learned mid-stream is taken out from then on', () => {
    const secrets: string[] = [];
    const filter = new SecretFilter(() => secrets);
    expect(filter.push('before ')).toBe('before ');
    secrets.push(PW);
    expect(filter.push(`after ${PW}`)).toBe(`after ${REDACTED}`);
  });
});
