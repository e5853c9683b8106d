/**
 * A reporter beside vitest's own: names every test that failed and then passed on its retry (the
 * lab's end-to-end tests retry once under CI, see vitest.config.ts), with what its failed attempt
 * said, at the very end of the run — where a CI log's tail shows it. A retried test is a race to
 * find, not a pass to forget.
 */
import type { Reporter, TestCase, TestModule } from 'vitest/node';

/** Lines of a failed attempt's message kept: the head says what failed, the rest is its output. */
const KEPT_LINES = 60;

export default class FlakyReporter implements Reporter {
  private readonly flaky: TestCase[] = [];

  onTestCaseResult(test: TestCase): void {
    if (test.diagnostic()?.flaky) this.flaky.push(test);
  }

  onTestRunEnd(_modules: readonly TestModule[]): void {
    if (this.flaky.length === 0) return;
    const out = [`\n${this.flaky.length} test(s) failed and passed on their retry — a race to look into:`];
    for (const test of this.flaky) {
      out.push(`  RETRIED ${test.module.moduleId.replace(`${process.cwd()}/`, '')} > ${test.fullName}`);
      for (const error of test.result().errors ?? []) {
        // An assertion cuts a long value out of its message (`expected '16.1 → 17.1: 2/3 …' to be ''`):
        // its diff holds the value whole.
        const text = [error.message ?? String(error), error.diff ?? ''].join('\n').trimEnd();
        out.push(
          ...text
            .split('\n')
            .slice(0, KEPT_LINES)
            .map((l) => `    | ${l}`),
        );
      }
    }
    console.log(out.join('\n'));
  }
}
