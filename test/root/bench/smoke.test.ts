/**
 * The benchmark itself, kept from rotting: `npm run bench` at N = 3, one round, on its own lab.
 * Asserts the shape of the result — every row there, every host deployed and verified, one SSH
 * connection per host per ibfleet command — never timing (speed is judged by the benchmark only).
 */
import { describe, expect, it } from 'vitest';
import { judgeSize, formatSize, formatVerdicts } from '../../../bench/report.js';
import { findTool, REFERENCE_TOOLS } from '../../../bench/references.js';
import { benchmarkSize, ROWS, type RowName, type SizeResult } from '../../../bench/run.js';
import { IS_ROOT, noteIfNotRoot, testLab } from '../../lab/helpers.js';

noteIfNotRoot('test/root/bench/smoke.test.ts (npm run bench at N = 3)');

describe.skipIf(!IS_ROOT)('npm run bench, smoke (N = 3, one round; needs root)', () => {
  it(
    'measures every row, deploys and verifies all 3 hosts over one connection per host per command',
    { timeout: 120_000 },
    async () => {
      // Ansible's modules need the python3 the lab hides for the fping prober below.
      const installed = REFERENCE_TOOLS.filter((t) => findTool(t) !== undefined && t !== 'ansible');
      const lines: string[] = [];
      const size: SizeResult = await benchmarkSize({
        hosts: 3,
        // Multi-rail, small: the lab's --nics path and every verify row at more than 2 NICs.
        nics: 4,
        rounds: 1,
        concurrency: 32,
        timeoutS: 60,
        fullMatrixHosts: 3,
        references: installed,
        labName: testLab('bench-smoke').name,
        mgmtSubnet: testLab('bench-smoke').mgmtSubnet,
        backgroundSampleMs: 100,
        // Every host without python3, with fping: the prober a bench row measures is the one asked for.
        prober: 'fping',
        log: (line) => lines.push(line),
      });

      const row = (name: RowName) => {
        const found = size.rows.find((r) => r.row === name);
        expect(found, `row ${name}`).toBeDefined();
        return found!;
      };
      const ibfleetRows = [
        ROWS.deploy,
        ROWS.deployAgain,
        ROWS.status,
        ROWS.ring,
        ROWS.full,
        ROWS.fullAgain,
        ROWS.rail,
        ROWS.railAgain,
        ROWS.rollback,
      ];
      for (const name of [...ibfleetRows, ROWS.floor, ...installed.map((t) => ROWS[t])]) expect(row(name).runs).toBe(1);

      expect(row(ROWS.deploy).hostsVerified).toEqual({ min: 3, max: 3 });
      expect(row(ROWS.deployAgain).hostsVerified).toEqual({ min: 3, max: 3 });
      expect(row(ROWS.ring).hostsVerified).toEqual({ min: 3, max: 3 });
      expect(row(ROWS.ring).cells).toEqual({ total: 3 * 4 * 4, passedMin: 48, mode: 'ring' });
      expect(row(ROWS.full).cells).toEqual({ total: 3 * 2 * 4 * 4, passedMin: 96, mode: 'full' });
      expect(row(ROWS.rail).cells).toEqual({ total: 3 * 2 * 4, passedMin: 24, mode: 'rail' });
      expect(row(ROWS.fullAgain).cells).toEqual(row(ROWS.full).cells);
      expect(row(ROWS.railAgain).cells).toEqual(row(ROWS.rail).cells);
      expect(size.verifyDefault).toEqual({ mode: 'full' });
      for (const name of ibfleetRows) expect(row(name).connectionsPerHost, name).toEqual({ min: 1, max: 1 });
      expect(row(ROWS.deploy).channelsPerHost!.max).toBeLessThanOrEqual(2);
      expect(row(ROWS.floor).hostsOk).toEqual({ min: 3, max: 3 });
      expect(row(ROWS.floor).connectionsPerHost).toEqual({ min: 1, max: 1 });
      for (const tool of installed) expect(row(ROWS[tool]).hostsOk, tool).toEqual({ min: 3, max: 3 });
      for (const r of size.rows) {
        expect(r.wallS!.n).toBe(1);
        expect(r.toolCpuS!.median).toBeGreaterThan(0);
        expect(r.failedRuns, r.row).toBe(0);
      }

      const verdict = judgeSize(size);
      expect(verdict.targets.allDeployedAndVerified).toBe(true);
      expect(verdict.targets.oneConnectionPerHost).toBe(true);
      expect(verdict.ratios.ibfleetOverFloor.wall).toBeGreaterThan(0);
      expect(formatSize(size)).toContain('ibfleet deploy');
      expect(formatSize(size)).toMatch(
        /^N = 3 × 4 NICs, prober fping: verify --hosts all without a mode checks: full\n/,
      );
      expect(formatSize(size)).toMatch(/\| ibfleet verify --rail +\| +3 \| +24 \| [^|]+\| +\d+ \|/);
      expect(formatVerdicts([verdict])).toContain('ibfleet/floor');
    },
  );
});
