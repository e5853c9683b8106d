/**
 * One channel's life (collect), driven by a fake channel: what is sent when, what comes back,
 * sudo's marker and password prompt, and a conversation's turn from the probe to the change.
 * The real channel is exercised end to end against sshd in the lab tests.
 */
import { EventEmitter } from 'node:events';
import { describe, expect, it, vi } from 'vitest';
import { CLOSE_GRACE_MS, collect, type CollectInput, type ShellChannel } from '../../src/runner/ssh-channel.js';
import { newSudoHandshake, SUDO_COMMAND } from '../../src/runner/sudo-handshake.js';
import { ConnectError, OUTPUT_KEEP, type Continuation } from '../../src/runner/transport.js';

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
  return collect(channel, {
    script: 'echo hi\n',
    sudo: undefined,
    sudoPassword: async () => undefined,
    who: 'root@h',
    options: {},
    conversation: undefined,
    ...input,
  });
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
    await expect(done).resolves.toEqual({
      code: 3,
      signal: undefined,
      stdout: 'one\ntwo\nthree',
      stderr: 'warning\n',
      first: undefined,
    });
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
  const sudo = newSudoHandshake('0123abcd');
  const PROMPT = '[ibfleet sudo 0123abcd] ';
  const READY = 'ibfleet-sudo-ready-0123abcd\n';

  it('the command sshd runs carries no nonce: the wrapper reads it from the first input line and gives it to sudo -p', () => {
    expect(SUDO_COMMAND).toBe(
      `sh -c 'IFS= read -r n || exit 70; exec sudo -S -p "[ibfleet sudo $n] " sh -c "echo ibfleet-sudo-ready-$n; exec sh -s"'`,
    );
    expect(newSudoHandshake().firstInput).toMatch(/^[0-9a-f]{32}\n$/);
    expect(newSudoHandshake().firstInput).not.toBe(newSudoHandshake().firstInput);
  });

  it('sends the nonce first and nothing else before sudo is ready; answers its prompt once with the password; drops what came before the ready line and the prompt itself', async () => {
    const channel = new FakeChannel();
    const done = start(channel, { sudo, sudoPassword: async () => 's3cret' });
    expect(channel.sent).toEqual(['0123abcd\n']);
    channel.err(PROMPT);
    await tick();
    expect(channel.sent).toEqual(['0123abcd\n', 's3cret\n']);
    channel.out(`motd noise\n${READY}hi\n`);
    expect(channel.sent).toEqual(['0123abcd\n', 's3cret\n', 'echo hi\n']);
    expect(channel.inputEnded).toBe(true);
    channel.exit(0);
    await expect(done).resolves.toMatchObject({ code: 0, stdout: 'hi\n', stderr: '' });
  });

  it.each([
    ['the old fixed marker', '[ibfleet-sudo-password-7f3a]'],
    ["sudo's default prompt", '[sudo] password for ops: '],
    ['a prompt with another nonce', '[ibfleet sudo ffffffff] '],
    ['the right prompt with text after it (so sudo is not what is waiting)', `${PROMPT}and more`],
  ])('%s on stderr gets no password', async (_, text) => {
    const channel = new FakeChannel();
    const done = start(channel, { sudo, sudoPassword: async () => 's3cret' });
    channel.err(text);
    await tick();
    expect(channel.sent).toEqual(['0123abcd\n']);
    channel.exit(1);
    await expect(done).rejects.toThrow(/did not start a shell/);
  });

  it('a ready line without the nonce (the old marker) starts nothing', async () => {
    const channel = new FakeChannel();
    const done = start(channel, { sudo });
    channel.out('IBFLEET-SUDO-READY-7f3a\nibfleet-sudo-ready-ffffffff\n');
    expect(channel.sent).toEqual(['0123abcd\n']);
    channel.exit(0);
    await expect(done).rejects.toThrow(/did not start a shell/);
  });

  it('a prompt split over two reads is still answered', async () => {
    const channel = new FakeChannel();
    start(channel, { sudo, sudoPassword: async () => 's3cret' });
    channel.err('[ibfleet sudo 0123');
    channel.err('abcd] ');
    await tick();
    expect(channel.sent).toEqual(['0123abcd\n', 's3cret\n']);
  });

  it('a second prompt means the password was wrong: the channel is closed and the run fails with that', async () => {
    const channel = new FakeChannel();
    const done = start(channel, { sudo, sudoPassword: async () => 'wrong' });
    channel.err(PROMPT);
    await tick();
    channel.err(`Sorry, try again.\n${PROMPT}`);
    await expect(done).rejects.toThrow(new ConnectError('sudo on root@h rejected the password', false));
    expect(channel.sent).toEqual(['0123abcd\n', 'wrong\n']);
  });

  it('a prompt without -K says to run again with it', async () => {
    const channel = new FakeChannel();
    const done = start(channel, { sudo });
    channel.err(PROMPT);
    await expect(done).rejects.toThrow(/^sudo on root@h asks for a password; run again with -K\/--ask-sudo-pass/);
    expect(channel.sent).toEqual(['0123abcd\n']);
  });

  it("sudo that ends before its shell started says why, in sudo's last words", async () => {
    const channel = new FakeChannel();
    const done = start(channel, { sudo });
    channel.err('alice is not in the sudoers file.\n');
    channel.exit(1);
    await expect(done).rejects.toThrow('sudo on root@h did not start a shell: alice is not in the sudoers file.');
  });
});

describe('collect: the -K password never leaves in what the host prints', () => {
  const sudo = newSudoHandshake('0123abcd');
  const PROMPT = '[ibfleet sudo 0123abcd] ';
  const READY = 'ibfleet-sudo-ready-0123abcd\n';

  /** A sudo channel whose prompt was answered with `password`; `secrets` as the transport gives them once it is known. */
  async function answered(password: string, input: Partial<CollectInput> = {}) {
    const channel = new FakeChannel();
    const done = start(channel, { sudo, sudoPassword: async () => password, secrets: () => [password], ...input });
    channel.err(PROMPT);
    await tick();
    expect(channel.sent).toEqual(['0123abcd\n', `${password}\n`]);
    return { channel, done };
  }

  /** Sends `text` as separate writes cut at `cuts`. */
  const inPieces = (send: (t: string) => void, text: string, cuts: readonly number[]) => {
    let from = 0;
    for (const cut of [...cuts, text.length]) {
      send(text.slice(from, cut));
      from = cut;
    }
  };

  it("a look-alike that echoes it before sudo's shell starts: the error built from its last words holds no password, at any split", async () => {
    const echo = 'pw is S3cretPW here\n';
    for (let cut = 0; cut <= echo.length; cut++) {
      const { channel, done } = await answered('S3cretPW');
      inPieces((t) => channel.err(t), echo, [cut]);
      channel.exit(1);
      const error = (await done.catch((e: Error) => e)) as Error;
      expect(error.message, `cut at ${cut}`).toBe('sudo on root@h did not start a shell: pw is [secret removed] here');
    }
  });

  it('echoed on stdout and stderr after the ready line, split anywhere: not in the lines handed on, the result, or its first output', async () => {
    const echo = 'out S3cretPW\n@@end\nagain S3cretPW';
    for (let cut = 0; cut <= echo.length; cut++) {
      const lines: string[] = [];
      let first: string | undefined;
      const { channel, done } = await answered('S3cretPW', {
        options: { onLine: (l) => lines.push(l) },
        conversation: { until: '@@end', next: (o) => void (first = o) },
      });
      channel.out(READY);
      inPieces((t) => channel.out(t), echo, [cut]);
      inPieces((t) => channel.err(t), 'err S3cretPW\n', [Math.min(cut, 11)]);
      channel.exit(3);
      const result = await done;
      const all = JSON.stringify({ lines, first, result });
      expect(all, `cut at ${cut}`).not.toContain('S3cretPW');
      expect(result).toMatchObject({
        first: 'out [secret removed]\n@@end\n',
        stdout: 'again [secret removed]',
        stderr: 'err [secret removed]\n',
        code: 3,
      });
      expect(lines).toEqual(['out [secret removed]', '@@end', 'again [secret removed]']);
    }
  });

  it('a password split inside one of its characters (UTF-8 bytes in two reads) is still recognised', async () => {
    const { channel, done } = await answered('pässwörd');
    channel.out(READY);
    const bytes = Buffer.from('echo pässwörd\n');
    const at = bytes.indexOf(0xc3) + 1; // between the two bytes of `ä`
    channel.emit('data', bytes.subarray(0, at));
    channel.emit('data', bytes.subarray(at));
    channel.exit(0);
    expect((await done).stdout).toBe('echo [secret removed]\n');
  });

  it("a password that is a word of the handshake (`sudo`, `ready`) does not hide sudo's prompt or ready line", async () => {
    for (const password of ['sudo', 'ready', 'ibfleet', '0123abcd']) {
      const { channel, done } = await answered(password);
      channel.out(`${READY}ran\n`);
      expect(channel.sent.at(-1)).toBe('echo hi\n');
      channel.err(`${PROMPT}said ${password}\n`);
      channel.exit(0);
      expect(await done, password).toMatchObject({ stdout: 'ran\n', stderr: 'said [secret removed]\n' });
    }
  });

  it('a channel without sudo (root) has it taken out too: the same password goes to every host', async () => {
    const channel = new FakeChannel();
    const done = start(channel, { secrets: () => ['S3cretPW'] });
    channel.out('S3cr');
    channel.out('etPW\n');
    channel.exit(0);
    expect((await done).stdout).toBe('[secret removed]\n');
  });
});

describe('collect: output a host floods', () => {
  const flood = (channel: FakeChannel, chars: number, to: 'out' | 'err' = 'out') => {
    const chunk = 'x'.repeat(64 * 1024);
    for (let sent = 0; sent < chars && !channel.closed; sent += chunk.length) channel[to](chunk);
  };

  it('more than OUTPUT_KEEP on stdout: reading stops, the channel is closed, the result keeps only the tail and says what was cut', async () => {
    const channel = new FakeChannel();
    const done = start(channel);
    flood(channel, 8 * OUTPUT_KEEP);
    expect(channel.closed).toBe(true);
    const result = await done;
    expect(result.cut).toMatchObject({ stream: 'stdout', afterTurn: false });
    expect(result.stdout.length).toBeLessThanOrEqual(OUTPUT_KEEP);
  });

  it('the same on stderr', async () => {
    const channel = new FakeChannel();
    const done = start(channel);
    flood(channel, 2 * OUTPUT_KEEP, 'err');
    expect((await done).cut).toMatchObject({ stream: 'stderr', afterTurn: false });
  });

  it('before sudo is ready (a login that prints a lot): no password is asked for, the result says what was cut', async () => {
    const channel = new FakeChannel();
    const asked: string[] = [];
    const done = start(channel, {
      sudo: newSudoHandshake('0123abcd'),
      sudoPassword: async () => (asked.push('asked'), 's3cret'),
    });
    flood(channel, 2 * OUTPUT_KEEP);
    expect(await done).toMatchObject({ cut: { stream: 'stdout', afterTurn: false } });
    expect(asked).toEqual([]);
  });

  it('in a conversation, a flood before the `until` line means no continuation is asked for or sent', async () => {
    const channel = new FakeChannel();
    const next = vi.fn(() => ({ script: 'apply\n' }));
    const done = start(channel, { conversation: { until: '@@end', next } });
    flood(channel, 2 * OUTPUT_KEEP);
    channel.out('@@end\n');
    expect(next).not.toHaveBeenCalled();
    expect(channel.sent).toEqual(['echo hi\n']);
    expect(await done).toMatchObject({ first: undefined, cut: { stream: 'stdout', afterTurn: false } });
  });
});

describe('collect: a host that stops answering', () => {
  it('a channel asked to close that does not close within CLOSE_GRACE_MS reports the host gone (the session then destroys the socket)', async () => {
    vi.useFakeTimers();
    try {
      const channel = new FakeChannel();
      channel.close = () => void (channel.closed = true); // a host that is gone never answers the close
      const gone = vi.fn();
      const abort = new AbortController();
      start(channel, { options: { signal: abort.signal }, onUnanswered: gone });
      abort.abort();
      expect(channel.closed).toBe(true);
      vi.advanceTimersByTime(CLOSE_GRACE_MS - 1);
      expect(gone).not.toHaveBeenCalled();
      vi.advanceTimersByTime(1);
      expect(gone).toHaveBeenCalledOnce();
    } finally {
      vi.useRealTimers();
    }
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
    const done = start(channel, {
      script: 'probe\n',
      options: { onLine: (l) => firstLines.push(l) },
      conversation: { until, next },
    });
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
    await expect(done).resolves.toEqual({
      code: 0,
      signal: undefined,
      stdout: 'applied\n',
      stderr: '',
      first: 'fact 1\n@@end\n',
    });
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

  it("nothing to do next: the shell's input is ended with nothing more sent", async () => {
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
    const done = start(channel, {
      options: { signal: first.signal },
      conversation: { until, next: () => ({ script: 'apply\n', options: { signal: second.signal } }) },
    });
    channel.out('@@end\n');
    first.abort();
    expect(channel.closed).toBe(false);
    second.abort();
    expect(channel.closed).toBe(true);
    await done;
  });

  it("the continuation's signal already aborted: nothing is sent, the channel is closed", async () => {
    const channel = new FakeChannel();
    const aborted = AbortSignal.abort();
    const done = start(channel, {
      conversation: { until, next: () => ({ script: 'apply\n', options: { signal: aborted } }) },
    });
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
