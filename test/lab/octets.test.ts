/** The test suite's labs never share a management subnet, in any test slot (test/lab/helpers.ts). */
import { describe, expect, it } from 'vitest';
import { GENERATION_OCTETS, MORE_TEST_LAB_OCTETS, TEST_LAB_OCTETS } from './helpers.js';

describe("the test labs' management subnets", () => {
  const octets = Object.values(TEST_LAB_OCTETS);

  it('one per lab: no two test files bring up labs on one subnet', () => {
    expect(new Set(octets).size).toBe(octets.length);
  });

  it('each a multiple of 10 whose slots 0..9 stay a valid third octet', () => {
    for (const [name, octet] of Object.entries(TEST_LAB_OCTETS)) {
      expect(octet % 10, name).toBe(0);
      expect(octet + 9, name).toBeLessThanOrEqual(255);
    }
  });
});

describe("the generation runs' management subnets (198.19.X)", () => {
  it("one per file and suite, in every slot, and none in the hand-made labs' 198.19.0–99", () => {
    const octets = Object.values(GENERATION_OCTETS).flatMap((o) => [100, 150, 200].map((s) => s + o!));
    expect(new Set(octets).size).toBe(octets.length);
    for (const o of octets) {
      expect(o % 10).toBe(0);
      expect(o).toBeGreaterThanOrEqual(100);
      expect(o + 9).toBeLessThanOrEqual(254);
    }
    expect(Math.max(...Object.values(GENERATION_OCTETS).map((o) => o!)) + 9).toBeLessThan(50);
  });
});

describe("the further test labs' management subnets (198.19.60–99)", () => {
  it('one per lab, a multiple of 10, slots 0..9 inside 60–99', () => {
    const octets: number[] = Object.values(MORE_TEST_LAB_OCTETS);
    expect(new Set(octets).size).toBe(octets.length);
    for (const o of octets) {
      expect(o % 10).toBe(0);
      expect(o).toBeGreaterThanOrEqual(60);
      expect(o + 9).toBeLessThanOrEqual(99);
    }
  });
});
