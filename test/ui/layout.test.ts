/** The live area always fits the terminal, keeps failures and running hosts in view, counts the rest. */
import { describe, expect, it } from 'vitest';
import { MAX_COMPACT_RUNNING, planLiveArea } from '../../src/ui/tui/layout.js';
import { fold, mem34 as mem34Ref, result as resultOf } from './fixtures.js';
import * as scenario from './scenarios.js';

describe('planLiveArea', () => {
  const big = fold(scenario.bigFleetMidRun(), { rows: 24 });

  it.each([2, 3, 5, 8, 12, 24, 40, 60, 120])('254 hosts in %i rows: never as tall as the terminal', (rows) => {
    const plan = planLiveArea(big, { rows, columns: 100 });
    expect(plan.height).toBeLessThan(rows);
    expect(plan.running.length + plan.hiddenRunning.length).toBe(32);
    expect(plan.running.length).toBeLessThanOrEqual(MAX_COMPACT_RUNNING);
  });

  it.each([
    [5, { failing: true, progress: true, running: 0, moreRunning: true }],
    [12, { failing: true, progress: true, running: 3, moreRunning: true }],
    [24, { failing: true, progress: true, running: 9, moreRunning: true }],
    [60, { failing: true, progress: true, running: 16, moreRunning: true }],
  ] as const)('in %i rows: failures named, running shown oldest first, the rest counted', (rows, expected) => {
    const plan = planLiveArea(big, { rows, columns: 100 });
    expect({
      failing: plan.failing,
      progress: plan.progress,
      running: plan.running.length,
      moreRunning: plan.moreRunning,
    }).toEqual(expected);
    expect(plan.running.map((r) => r.host.id)).toEqual(Array.from({ length: expected.running }, (_, i) => 201 + i));
  });

  it('a small fleet shows every host in host order, running or finished, and no counted lines', () => {
    const plan = planLiveArea(fold(scenario.runningTwo), { rows: 24, columns: 100 });
    expect(plan).toMatchObject({ hiddenRunning: [], moreRunning: false, failing: false, progress: false, height: 3 });
    expect(
      plan.rows.map((r) =>
        'running' in r ? `${r.running.host.id} running` : `${r.finished.host.id} ${r.finished.status}`,
      ),
    ).toEqual(['16 running', '34 running']);
    const oneDone = fold([...scenario.runningTwo, { type: 'hostDone', result: resultOf(mem34Ref, 'changed') }]);
    expect(
      planLiveArea(oneDone, { rows: 24, columns: 100 }).rows.map((r) =>
        'running' in r ? `${r.running.host.id} running` : `${r.finished.host.id} ${r.finished.status}`,
      ),
    ).toEqual(['16 running', '34 changed']);
  });

  it('after the run only the summary is live (the rest is frozen above)', () => {
    expect(planLiveArea(fold(scenario.mixedFailures), { rows: 24, columns: 100 }).height).toBe(1);
  });

  it('the verify grid is live when it fits, else one line of counts', () => {
    const half = fold(scenario.verifyHalf(), { command: 'verify' });
    expect(planLiveArea(half, { rows: 24, columns: 100 }).matrix?.kind).toBe('nic');
    expect(planLiveArea(half, { rows: 24, columns: 30 }).matrix?.kind).toBe('hosts');
    expect(planLiveArea(half, { rows: 24, columns: 12 }).matrix?.kind).toBe('counts');
    expect(planLiveArea(half, { rows: 3, columns: 100 }).matrix?.kind).toBe('counts');
  });

  it('status groups are windowed, failing groups first, the rest counted', () => {
    const partial = fold(
      scenario.statusFolding.filter((a) => a.type !== 'runEnd'),
      { command: 'status' },
    );
    const roomy = planLiveArea(partial, { rows: 24, columns: 100 });
    expect(roomy.groups.map((g) => g.status)).toEqual(['unreachable', 'drift', 'drift', 'ok']);
    const tight = planLiveArea(partial, { rows: 6, columns: 100 });
    expect(tight.groups.map((g) => g.status)).toEqual(['unreachable']);
    expect(tight.moreGroups).toBe(true);
    expect(tight.height).toBeLessThan(6);
  });
});
