import { mkdirSync, mkdtempSync, readFileSync, rmdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import {
  labNeighbourEntries,
  raiseNeighbourTable,
  releaseNeighbourTable,
  thresholdsFor,
  type NeighPlaces,
} from '../../src/lab/neigh.js';

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

/** A stand-in for /proc/sys/net/ipv4/neigh/default holding the kernel's defaults, and a lab root. */
function places(): NeighPlaces & { read(): number[]; set(values: number[]): void } {
  const base = mkdtempSync(join(tmpdir(), 'ibfleet-neigh-'));
  dirs.push(base);
  const neigh = join(base, 'neigh');
  mkdirSync(neigh);
  const set = (values: number[]) => values.forEach((v, i) => writeFileSync(join(neigh, `gc_thresh${i + 1}`), `${v}\n`));
  set([128, 512, 1024]);
  return {
    neigh,
    root: join(base, 'lab'),
    set,
    read: () => [1, 2, 3].map((i) => Number(readFileSync(join(neigh, `gc_thresh${i}`), 'utf8'))),
  };
}

const lab = (name: string, hosts: number, nics = 2) =>
  ({
    name,
    hosts: Array.from({ length: hosts }, () => ({ nics: Array.from({ length: nics }) })),
    fabric: { nics },
  }) as never;

describe("the machine's neighbour table while labs are up", () => {
  it('a 20-host lab may hold 1 640 entries at once: gc_thresh3 4096', () => {
    expect(labNeighbourEntries(lab('a', 20))).toBe(40 * 40 + 40);
    expect(thresholdsFor(1640)).toEqual({ gc_thresh1: 512, gc_thresh2: 2048, gc_thresh3: 4096 });
  });

  it('a lab of three 8-NIC hosts may hold 24 × 24 + 6 entries; one of 20 holds 160 × 160 + 40', () => {
    expect(labNeighbourEntries(lab('a', 3, 8))).toBe(24 * 24 + 6);
    expect(labNeighbourEntries(lab('a', 20, 8))).toBe(160 * 160 + 40);
  });

  it('raised for every lab up together; only the last lab down puts the original values back', async () => {
    const at = places();
    await raiseNeighbourTable(lab('a', 20), at);
    expect(at.read()).toEqual([512, 2048, 4096]);
    await raiseNeighbourTable(lab('b', 20), at);
    expect(at.read()).toEqual([1024, 4096, 8192]);
    await releaseNeighbourTable('a', at);
    expect(at.read()).toEqual([1024, 4096, 8192]);
    await releaseNeighbourTable('b', at);
    expect(at.read()).toEqual([128, 512, 1024]);
  });

  it('never lowers what the machine had, and leaves a value someone changed meanwhile', async () => {
    const at = places();
    at.set([1024, 4096, 65536]);
    await raiseNeighbourTable(lab('a', 20), at);
    expect(at.read()).toEqual([1024, 4096, 65536]);
    at.set([1024, 9999, 65536]);
    await releaseNeighbourTable('a', at);
    expect(at.read()).toEqual([1024, 9999, 65536]);
  });

  it('a lab that raised nothing, or was never recorded, changes nothing at down', async () => {
    const at = places();
    await releaseNeighbourTable('never-up', at);
    expect(at.read()).toEqual([128, 512, 1024]);
  });
});

describe('the lock beside other labs going down', () => {
  it('the last lab down of another process removes the empty lab root between the root made and the lock taken: the lock is taken all the same', async () => {
    const at = places();
    // Other processes' lab downs, 20 of them: each removes the lab root where it finds it empty.
    let removed = 0;
    const remover = (async () => {
      while (removed < 20) {
        try {
          rmdirSync(at.root);
          removed++;
        } catch {
          // not empty (the lock or the record is there), or gone already
        }
        await new Promise((r) => setImmediate(r));
      }
    })();
    for (let i = 0; removed < 20; i++) {
      await raiseNeighbourTable(lab(`l${i}`, 1), at);
      await releaseNeighbourTable(`l${i}`, at);
    }
    await remover;
    expect(at.read()).toEqual([128, 512, 1024]);
  });
});
