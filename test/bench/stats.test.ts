/** The benchmark's arithmetic and parsing, as tables. */
import { describe, expect, it } from 'vitest';
import { machineBusyTicks, parseTimeOutput } from '../../bench/measure.js';
import { fitLinear, spread } from '../../bench/stats.js';

describe('spread: median and range of the rounds', () => {
  it.each([
    [[3], { median: 3, min: 3, max: 3, n: 1 }],
    [[5, 1, 3], { median: 3, min: 1, max: 5, n: 3 }],
    [[4, 1, 3, 2], { median: 2.5, min: 1, max: 4, n: 4 }],
    [[2, Number.NaN, 4], { median: 3, min: 2, max: 4, n: 2 }],
  ])('%j → %j', (values, expected) => expect(spread(values)).toEqual(expected));

  it('nothing measured is null, not zero', () => expect(spread([Number.NaN])).toBeNull());
});

describe('fitLinear: cost against fleet size', () => {
  it('a fixed cost plus a cost per host is linear, with that slope and intercept', () => {
    const fit = fitLinear([20, 50, 100, 254].map((n) => ({ n, y: 0.4 + 0.01 * n })));
    expect(fit.slope).toBeCloseTo(0.01, 10);
    expect(fit.intercept).toBeCloseTo(0.4, 10);
    expect(fit.r2).toBeCloseTo(1, 10);
    expect(fit.verdict).toBe('linear');
    expect(fit.marginalFirst).toBeCloseTo(fit.marginalLast, 10);
  });

  it('a cost that grows with the square of N is super-linear', () => {
    const fit = fitLinear([20, 50, 100, 254].map((n) => ({ n, y: 0.001 * n * n })));
    expect(fit.verdict).toBe('super-linear');
    expect(fit.exponent).toBeCloseTo(2, 5);
  });

  it('two sizes are too few to tell', () =>
    expect(
      fitLinear([
        { n: 20, y: 1 },
        { n: 50, y: 2 },
      ]).verdict,
    ).toBe('too few points'));
});

describe('reading the measurements', () => {
  it.each([
    ['1.23 0.50 0.25 104000\n', { userS: 0.5, sysS: 0.25, maxRssKiB: 104000 }],
    ['Command exited with non-zero status 1\n2.00 1.00 0.10 90000\n', { userS: 1, sysS: 0.1, maxRssKiB: 90000 }],
    ['garbage', undefined],
  ])('GNU time %j', (text, expected) => expect(parseTimeOutput(text)).toEqual(expected));

  it('busy ticks of /proc/stat leave out idle and iowait', () => {
    expect(machineBusyTicks('cpu  100 2 30 5000 40 1 3 4 0 0\ncpu0 1 2 3\n')).toBe(100 + 2 + 30 + 1 + 3 + 4);
  });
});
