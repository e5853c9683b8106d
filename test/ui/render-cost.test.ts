import { describe, expect, it } from 'vitest';
import { formatRenderCost, measureRenderCost } from './render-cost.js';

describe('render cost for 254 hosts', () => {
  // The full comparison (with the render-per-event variant) runs with `npx tsx test/ui/render-cost.ts`.
  it('is measured and printed (CPU time is reported, never asserted)', async () => {
    const cost = await measureRenderCost({ wallTickMs: 4, naive: false });
    console.log(formatRenderCost(cost));
    expect(cost.events).toBe(1 + 254 * 7 + 1);
    expect(cost.finalFrame).toContain('deploy finished in');
    expect(cost.tuiFrames).toBeGreaterThan(100);
  });
});
