/**
 * comparePaths orders paths as Node's default collation does (`en`), without loading ICU: the
 * order the scripts list directories in must not change with it.
 */
import { describe, expect, it } from 'vitest';
import { comparePaths } from '../../src/script/path-order.js';

const EN = new Intl.Collator('en');
const ALPHABET = '_-.@/+0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ';

/** A small deterministic generator: the same pairs on every run. */
function generator(seed: number): () => number {
  let state = seed;
  return () => (state = (state * 1103515245 + 12345) % 2147483648) / 2147483648;
}

describe('comparePaths', () => {
  it("orders ibfleet's directories as localeCompare does: depth ties by punctuation, digits, letters, then case", () => {
    const dirs = [
      '/etc/networkd-dispatcher/routable.d',
      '/etc/NetworkManager/dispatcher.d',
      '/etc/network/if-up.d',
      '/etc/network_x',
      '/etc/ibfleet/previous/etc',
      '/etc/Ibfleet',
      '/etc/ibfleet',
      '/etc/sysctl.d',
      '/etc/systemd/system/timers.target.d',
      '/etc/60-x',
    ];
    expect([...dirs].sort(comparePaths)).toEqual([...dirs].sort((a, b) => EN.compare(a, b)));
  });

  it('agrees in sign with the en collation on 100 000 pairs of path characters, case variants among them', () => {
    const random = generator(31);
    const word = (letters: string) =>
      Array.from({ length: 1 + Math.floor(random() * 10) }, () => letters[Math.floor(random() * letters.length)]).join(
        '',
      );
    const flipCase = (text: string) =>
      [...text].map((c) => (random() < 0.3 ? (c === c.toLowerCase() ? c.toUpperCase() : c.toLowerCase()) : c)).join('');
    const disagree: string[] = [];
    for (let i = 0; i < 100_000; i++) {
      const a = word(i % 2 ? ALPHABET : '_-./0aAbBnN');
      const b = random() < 0.3 ? flipCase(a) : word(i % 2 ? ALPHABET : '_-./0aAbBnN');
      if (Math.sign(comparePaths(a, b)) !== Math.sign(EN.compare(a, b))) disagree.push(`${a} ${b}`);
    }
    expect(disagree).toEqual([]);
  });

  it('leaves a path with any other character to localeCompare', () => {
    expect(Math.sign(comparePaths('/etc/é', '/etc/f'))).toBe(Math.sign('/etc/é'.localeCompare('/etc/f')));
    expect(comparePaths('/etc/a b', '/etc/a b')).toBe(0);
  });
});
