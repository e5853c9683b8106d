/** The verify matrix model: ends, pending cells, results, widening. */
import { describe, expect, it } from 'vitest';
import { applyCells, createMatrix, matrixGeometry, widenMatrix } from '../../src/ui/tui/matrix.js';
import { allPairs, cell, cpu16, nic, NICS } from './fixtures.js';

const [a, b, c, d] = NICS as [(typeof NICS)[0], (typeof NICS)[0], (typeof NICS)[0], (typeof NICS)[0]];

describe('matrix model', () => {
  it('orders ends by host then NIC, whatever the announcement order', () => {
    const m = createMatrix([...allPairs()].reverse());
    expect(m.ends.map((e) => `${e.host}/${e.iface}`)).toEqual(['16/ibs5f0', '16/ibs5f1', '34/ib0', '34/ib1']);
    expect(m.counts).toEqual({ pending: 12, passed: 0, failed: 0, skipped: 0, 'not-run': 0 });
    expect(m.grids.get('ping')![0]![0]).toBeUndefined(); // a NIC and itself: no cell
  });

  it.each([
    [true, 'passed'],
    [false, 'failed'],
    [null, 'skipped'],
  ] as const)('a cell with ok=%s is %s', (ok, mark) => {
    const m = applyCells(createMatrix(allPairs()), [cell(a, c, ok)]);
    expect(m.grids.get('ping')![0]![2]).toBe(mark);
    expect(m.counts[mark]).toBe(1);
    expect(m.counts.pending).toBe(11);
  });

  it('a cell reported again replaces its first result everywhere', () => {
    const m = applyCells(createMatrix(allPairs()), [cell(a, c, false), cell(a, c, true)]);
    expect(m.counts).toEqual({ pending: 11, passed: 1, failed: 0, skipped: 0, 'not-run': 0 });
    expect(m.failures).toEqual([]);
  });

  it('does not modify the model it was given', () => {
    const before = createMatrix(allPairs());
    applyCells(before, [cell(a, b, true)]);
    expect(before.counts.pending).toBe(12);
    expect(before.grids.get('ping')![0]![1]).toBe('pending');
  });

  it('a cell outside the announced matrix widens it, keeping earlier results', () => {
    const m = applyCells(createMatrix(allPairs()), [cell(a, b, true)]);
    const extra = nic({ id: 40, name: 'host40', target: 'x' }, 1, 'ib0');
    const wide = applyCells(m, [cell(a, extra, false)]);
    expect(wide.ends.map((e) => e.host)).toEqual([16, 16, 34, 34, 40]);
    expect(wide.counts).toEqual({ pending: 11, passed: 1, failed: 1, skipped: 0, 'not-run': 0 });
    expect(widenMatrix(wide, [{ from: d, to: a, method: 'rping' }]).methods).toEqual(['ping', 'rping']);
  });

  it('geometry: label column, one column per destination, one grid per method', () => {
    const g = matrixGeometry(createMatrix([...allPairs('ping'), ...allPairs('rping')]));
    expect(g.labels).toEqual(['16/ibs5f0', '16/ibs5f1', '34/ib0', '34/ib1']);
    expect(g.labelWidth).toBe(9);
    expect(g.width).toBe(9 + (2 + 9) * 2 + (2 + 6) * 2);
    expect(g.height).toBe(2 * 5);
    void cpu16;
  });
});
