/**
 * One channel's life (collect), driven by a fake channel: what is sent when, what comes back,
 * sudo's marker and password prompt, and a conversation's turn from the probe to the change.
 * The real channel is exercised end to end against sshd in the lab tests.
 */
import { EventEmitter } from 'node:events';
import { describe, expect, it } from 'vitest';
import { collect, SUDO_PROMPT, SUDO_READY, type CollectInput, type ShellChannel } from '../../src/runner/ssh-session.js';
import { ConnectError, type Continuation } from '../../src/runner/transport.js';

/** What the remote side would do, step by step; `sent` records what ibfleet sent it. */
class FakeChannel extends EventEmitter implements ShellChannel {
  readonly stderr = new EventEmitter();
  readonly sent: string[] = [];
  inputEnded = false;
  closed = false;

  write(data: string): boolean {
    this.sent.push(data);
    return true;
  }

  end(data?: string): void {
    if (data !== undefined) this.sent.push(data);
    this.inputEnded = true;
  }

  close(): void {
    if (this.closed) return;
    this.closed = true;
    queueMicrotask(() => this.emit('close'));
  }

  out(text: string): void {
    this.emit('data', Buffer.from(text));
  }

  err(text: string): void {
    this.stderr.emit('data', Buffer.from(text));
  }

  exit(code: number | null, signal?: string): void {
    this.emit('exit', code, signal);
    this.close();
  }
}

const tick = () => new Promise((resolve) => setImmediate(resolve));

function start(channel: FakeChannel, input: Partial<CollectInput> = {}) {
  return collect(channel, { script: 'echo hi\n', sudo: false, sudoPassword: async () => undefined, who: 'root@h', options: {}, conversation: undefined, ...input });
}

describe('collect: one script in one channel', () => {
  it('sends the script and ends the input, hands each complete line to onLine (the last one at close), and resolves with the output and exit', async () => {
    const channel = new FakeChannel();
    const lines: string[] = [];
    const done = start(channel, { options: { onLine: (l) => lines.push(l) } });
    expect(channel.sent).toEqual(['echo hi\n']);
    expect(channel.inputEnded).toBe(true);
    channel.out('one\ntw');
    channel.out('o\nthree');
    expect(lines).toEqual(['one', 'two']);
    channel.err('warning\n');
    channel.exit(3);
    await expect(done).resolves.toEqual({ code: 3, signal: undefined, stdout: 'one\ntwo\nthree', stderr: 'warning\n', first: undefined });
    expect(lines).toEqual(['one', 'two', 'three']);
  });

  it('a script killed by a signal has no exit code, and says which signal', async () => {
    const channel = new FakeChannel();
    const done = start(channel);
    channel.exit(null, 'TERM');
    await expect(done).resolves.toMatchObject({ code: null, signal: 'TERM' });
  });

  it('aborting the signal closes the channel; what came so far is the result', async () => {
    const channel = new FakeChannel();
    const abort = new AbortController();
    const done = start(channel, { options: { signal: abort.signal } });
    channel.out('partial\n');
    abort.abort();
    expect(channel.closed).toBe(true);
    await expect(done).resolves.toMatchObject({ code: null, stdout: 'partial\n' });
  });
});

describe('collect: through sudo', () => {
  it('sends nothing before sudo is ready; answers the prompt once with the password; drops what came before the marker and the prompt itself', async () => {
    const channel = new FakeChannel();
    const done = start(channel, { sudo: true, sudoPassword: async () => 's3cret' });
    expect(channel.sent).toEqual([]);
    channel.err(`${SUDO_PROMPT}`);
    await tick();
    expect(channel.sent).toEqual(['s3cret\n']);
    channel.out(`motd noise\n${SUDO_READY}\nhi\n`);
    expect(channel.sent).toEqual(['s3cret\n', 'echo hi\n']);
    expect(channel.inputEnded).toBe(true);
    channel.exit(0);
    await expect(done).resolves.toMatchObject({ code: 0, stdout: 'hi\n', stderr: '' });
  });

  it('a second prompt means the password was wrong: the channel is closed and the run fails with that', async () => {
    const channel = new FakeChannel();
    const done = start(channel, { sudo: true, sudoPassword: async () => 'wrong' });
    channel.err(SUDO_PROMPT);
    await tick();
    channel.err(`Sorry, try again.\n${SUDO_PROMPT}`);
    await expect(done).rejects.toThrow(new ConnectError('sudo on root@h rejected the password', false));
    expect(channel.sent).toEqual(['wrong\n']);
  });

  it('a prompt without -K says to run again with it', async () => {
    const channel = new FakeChannel();
    const done = start(channel, { sudo: true });
    channel.err(SUDO_PROMPT);
    await expect(done).rejects.toThrow(/^sudo on root@h asks for a password; run again with -K\/--ask-sudo-pass/);
    expect(channel.sent).toEqual([]);
  });

  it('sudo that ends before its shell started says why, in sudo\'s last words', async () => {
    const channel = new FakeChannel();
    const done = start(channel, { sudo: true });
    channel.err('alice is not in the sudoers file.\n');
    channel.exit(1);
    await expect(done).rejects.toThrow('sudo on root@h did not start a shell: alice is not in the sudoers file.');
  });
});

describe('collect: a conversation (probe, then the change, in one shell)', () => {
  const until = '@@end';

  it('keeps the input open for the first script, hands its output through the `until` line to next(), sends the continuation and ends the input', async () => {
    const channel = new FakeChannel();
    const firstLines: string[] = [];
    const nextLines: string[] = [];
    let seen: string | undefined;
    const next = (output: string): Continuation => {
      seen = output;
      return { script: 'apply\n', options: { onLine: (l) => nextLines.push(l) } };
    };
    const done = start(channel, { script: 'probe\n', options: { onLine: (l) => firstLines.push(l) }, conversation: { until, next } });
    expect(channel.sent).toEqual(['probe\n']);
    expect(channel.inputEnded).toBe(false);
    channel.out('fact 1\n@@en');
    expect(seen).toBeUndefined();
    channel.out('d\n');
    expect(seen).toBe('fact 1\n@@end\n');
    expect(channel.sent).toEqual(['probe\n', 'apply\n']);
    expect(channel.inputEnded).toBe(true);
    channel.out('applied\n');
    channel.exit(0);
    await expect(done).resolves.toEqual({ code: 0, signal: undefined, stdout: 'applied\n', stderr: '', first: 'fact 1\n@@end\n' });
    expect(firstLines).toEqual(['fact 1', '@@end']);
    expect(nextLines).toEqual(['applied']);
  });

  it('the `until` line counts only as a whole line, also as the very first one', async () => {
    const channel = new FakeChannel();
    const seen: string[] = [];
    const done = start(channel, { conversation: { until, next: (o) => void seen.push(o) } });
    channel.out('x@@end\n');
    expect(seen).toEqual([]);
    channel.out('@@end\n');
    expect(seen).toEqual(['x@@end\n@@end\n']);
    channel.exit(0);
    await done;

    const second = new FakeChannel();
    const seenFirst: string[] = [];
    const again = start(second, { conversation: { until, next: (o) => void seenFirst.push(o) } });
    second.out('@@end\n');
    expect(seenFirst).toEqual(['@@end\n']);
    second.exit(0);
    await again;
  });

  it('nothing to do next: the shell\'s input is ended with nothing more sent', async () => {
    const channel = new FakeChannel();
    const done = start(channel, { conversation: { until, next: () => undefined } });
    channel.out('@@end\n');
    expect(channel.sent).toEqual(['echo hi\n']);
    expect(channel.inputEnded).toBe(true);
    channel.exit(0);
    await expect(done).resolves.toMatchObject({ first: '@@end\n', stdout: '' });
  });

  it('a decision that throws closes the channel and fails with that error', async () => {
    const channel = new FakeChannel();
    const done = start(channel, {
      conversation: {
        until,
        next: () => {
          throw new Error('cannot plan');
        },
      },
    });
    channel.out('@@end\n');
    expect(channel.closed).toBe(true);
    await expect(done).rejects.toThrow('cannot plan');
  });

  it('the continuation brings its own signal: the first one no longer closes the channel, the new one does', async () => {
    const channel = new FakeChannel();
    const first = new AbortController();
    const second = new AbortController();
    const done = start(channel, { options: { signal: first.signal }, conversation: { until, next: () => ({ script: 'apply\n', options: { signal: second.signal } }) } });
    channel.out('@@end\n');
    first.abort();
    expect(channel.closed).toBe(false);
    second.abort();
    expect(channel.closed).toBe(true);
    await done;
  });

  it('the continuation\'s signal already aborted: nothing is sent, the channel is closed', async () => {
    const channel = new FakeChannel();
    const aborted = AbortSignal.abort();
    const done = start(channel, { conversation: { until, next: () => ({ script: 'apply\n', options: { signal: aborted } }) } });
    channel.out('@@end\n');
    expect(channel.sent).toEqual(['echo hi\n']);
    expect(channel.closed).toBe(true);
    await expect(done).resolves.toMatchObject({ first: '@@end\n' });
  });

  it('the decision may come later: the shell waits on its input, then runs what was decided', async () => {
    const channel = new FakeChannel();
    let decide!: (c: Continuation | undefined) => void;
    const done = start(channel, { conversation: { until, next: () => new Promise((resolve) => (decide = resolve)) } });
    channel.out('@@end\n');
    await tick();
    expect(channel.sent).toEqual(['echo hi\n']);
    expect(channel.inputEnded).toBe(false);
    decide({ script: 'apply\n' });
    await tick();
    expect(channel.sent).toEqual(['echo hi\n', 'apply\n']);
    channel.out('applied\n');
    channel.exit(0);
    await expect(done).resolves.toMatchObject({ first: '@@end\n', stdout: 'applied\n', code: 0 });
  });

  it('a channel that closed while the decision was pending takes nothing more; a decision that fails closes it', async () => {
    const channel = new FakeChannel();
    let decide!: (c: Continuation | undefined) => void;
    const done = start(channel, { conversation: { until, next: () => new Promise((resolve) => (decide = resolve)) } });
    channel.out('@@end\n');
    channel.exit(null, 'HUP');
    await expect(done).resolves.toMatchObject({ first: '@@end\n', code: null, signal: 'HUP' });
    decide({ script: 'apply\n' });
    await tick();
    expect(channel.sent).toEqual(['echo hi\n']);

    const second = new FakeChannel();
    const failed = start(second, { conversation: { until, next: () => Promise.reject(new Error('plan failed')) } });
    second.out('@@end\n');
    await expect(failed).rejects.toThrow('plan failed');
    expect(second.closed).toBe(true);
  });
});
