/** The test suite's labs never share a management subnet, in any test slot (test/lab/helpers.ts). */
import { describe, expect, it } from 'vitest';
import { TEST_LAB_OCTETS } from './helpers.js';

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
