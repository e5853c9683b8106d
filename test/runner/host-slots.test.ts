import { describe, expect, it } from 'vitest';
import { HostSlots } from '../../src/runner/host-slots.js';

/** Runs `pieces` (host → slots each) through HostSlots; each piece takes `ms`. The most in use on each host at once, and the order they started. */
async function schedule(perHost: number, pieces: readonly Record<number, number>[], ms = 5) {
  const slots = new HostSlots(perHost);
  const inUse = new Map<number, number>();
  const most = new Map<number, number>();
  const started: number[] = [];
  await Promise.all(
    pieces.map((needs, n) => {
      const map = new Map(Object.entries(needs).map(([h, k]) => [Number(h), k]));
      return slots.run(map, async () => {
        started.push(n);
        for (const [h, k] of map) {
          inUse.set(h, (inUse.get(h) ?? 0) + k);
          most.set(h, Math.max(most.get(h) ?? 0, inUse.get(h)!));
        }
        await new Promise((r) => setTimeout(r, ms));
        for (const [h, k] of map) inUse.set(h, inUse.get(h)! - k);
      });
    }),
  );
  return { most: Object.fromEntries(most), started };
}

describe('HostSlots', () => {
  it('never runs more than the bound on a host, and runs pieces on different hosts at once', async () => {
    // Batches of 4 rping cells into each of 6 hosts, their clients on the others (as verify's are).
    const pieces = [1, 2, 3, 4, 5, 6].flatMap((dest) =>
      [1, 2, 3, 4, 5, 6].filter((s) => s !== dest).map((source) => ({ [dest]: 4, [source]: 4 })),
    );
    const { most } = await schedule(8, pieces);
    expect(Object.values(most).every((n) => n <= 8)).toBe(true);
    expect(Math.max(...Object.values(most))).toBe(8);
  });

  it('takes every slot a piece needs together: pieces that cross (A then B, B then A) never wait on each other', async () => {
    const { started } = await schedule(2, [{ 1: 2 }, { 2: 2 }, { 1: 1, 2: 1 }, { 2: 1, 1: 1 }]);
    expect(started).toHaveLength(4);
    expect(started.slice(0, 2).sort()).toEqual([0, 1]);
  });

  it('lets a later piece that fits start before an earlier one that waits', async () => {
    const { started } = await schedule(4, [{ 1: 4 }, { 1: 2, 2: 2 }, { 2: 2 }]);
    expect(started).toEqual([0, 2, 1]);
  });

  it('runs a piece asking more than the bound alone on that host, instead of never', async () => {
    const { started, most } = await schedule(2, [{ 1: 1 }, { 1: 5 }, { 1: 1 }]);
    expect(started).toEqual([0, 2, 1]);
    expect(most[1]).toBe(5);
  });

  it('gives the slots back when a piece fails', async () => {
    const slots = new HostSlots(1);
    await expect(slots.run(new Map([[1, 1]]), () => Promise.reject(new Error('host gone')))).rejects.toThrow(
      'host gone',
    );
    expect(await slots.run(new Map([[1, 1]]), () => Promise.resolve('ran'))).toBe('ran');
  });
});
