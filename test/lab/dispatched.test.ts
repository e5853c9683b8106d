/**
 * When lab restart and lab flap may say the hooks have run (src/lab/dispatched.ts): from the
 * dispatchers' own word — NetworkManager's log of its dispatcher's calls and answers (1.30's and
 * 1.42's lines), networkd-dispatcher's record of the reports it handled beside networkctl's.
 */
import { describe, expect, it } from 'vitest';
import {
  networkdDispatchDone,
  nmDispatchDone,
  parseDispatchRecord,
  parseNetworkctlList,
} from '../../src/lab/dispatched.js';

const restart142 = [
  '<info>  [1795746231.1810] NetworkManager (version 1.42.4) is starting... (after a restart, boot:b659)',
  "<debug> [1795746231.2044] dispatcher: (1) dispatching action 'hostname'",
  '<debug> [1795746231.2882] dispatcher: (1) succeeded (after 0.083 sec, 1 scripts invoked)',
  "<debug> [1795746231.2901] dispatcher: (3) (ibs5f0) dispatching action 'pre-up' (with callback)",
  '<debug> [1795746231.3256] dispatcher: (3) succeeded (after 0.036 sec, 0 scripts invoked)',
  '<info>  [1795746231.3298] device (ibs5f0): Activation: successful, device activated.',
  "<debug> [1795746231.3299] dispatcher: (5) (ibs5f0) dispatching action 'up'",
  '<info>  [1795746231.3742] manager: startup complete',
];
const answer5 = '<debug> [1795746231.7258] dispatcher: (5) succeeded (after 0.396 sec, 1 scripts invoked)';

describe('NetworkManager: its dispatcher answered every call since the event', () => {
  it('a restart: the new process started up, and its calls are answered (1.42)', () => {
    expect(nmDispatchDone(restart142.join('\n'), { kind: 'restart' })).toBe(false);
    expect(nmDispatchDone([...restart142, answer5].join('\n'), { kind: 'restart' })).toBe(true);
  });

  it("a restart: the old process's unanswered call does not count, a start still waiting does not finish", () => {
    const old = "<debug> [1795746200.0000] dispatcher: (9) (ibs5f0) dispatching action 'down'";
    expect(nmDispatchDone([old, ...restart142, answer5].join('\n'), { kind: 'restart' })).toBe(true);
    const waiting = restart142
      .slice(0, -1)
      .concat("<info> [1.0] manager: startup complete is waiting for device 'ibs5f1'");
    expect(nmDispatchDone([...waiting, answer5].join('\n'), { kind: 'restart' })).toBe(false);
    expect(nmDispatchDone('', { kind: 'restart' })).toBe(false);
  });

  it("1.30's answers name each script, or that none ran", () => {
    const log = [
      '<info>  [1.0] NetworkManager (version 1.30.6) is starting... (after a restart)',
      "<debug> [1.1] dispatcher: (2) (ib0) dispatching action 'up'",
      "<debug> [1.1] dispatcher: (3) (ib0) dispatching action 'pre-up'",
      '<debug> [1.2] dispatcher: (3) succeeded but no scripts invoked',
      '<info>  [1.3] manager: startup complete',
    ];
    expect(nmDispatchDone(log.join('\n'), { kind: 'restart' })).toBe(false);
    log.push('<debug> [1.4] dispatcher: (2) /etc/NetworkManager/dispatcher.d/50-ibfleet-routes succeeded');
    expect(nmDispatchDone(log.join('\n'), { kind: 'restart' })).toBe(true);
  });

  const flap = { kind: 'flap', iface: 'ibs5f0' } as const;
  it('a flap inside the carrier grace: done when the carrier is back on that NIC', () => {
    expect(nmDispatchDone('', flap)).toBe(false);
    expect(nmDispatchDone('<info>  [1.0] device (ibs5f1): carrier: link connected', flap)).toBe(false);
    expect(nmDispatchDone('<info>  [1.0] device (ibs5f0): carrier: link connected', flap)).toBe(true);
  });

  it('a flap longer than the grace: the NIC taken down must be active again and its up answered', () => {
    const log = [
      "<info>  [1.0] device (ibs5f0): state change: activated -> unavailable (reason 'carrier-changed')",
      "<debug> [1.0] dispatcher: (8) (ibs5f0) dispatching action 'down'",
      '<info>  [1.1] device (ibs5f0): carrier: link connected',
      '<debug> [1.2] dispatcher: (8) succeeded (after 0.102 sec, 1 scripts invoked)',
    ];
    expect(nmDispatchDone(log.join('\n'), flap)).toBe(false);
    log.push('<info>  [1.3] device (ibs5f0): Activation: successful, device activated.');
    log.push("<debug> [1.3] dispatcher: (10) (ibs5f0) dispatching action 'up'");
    expect(nmDispatchDone(log.join('\n'), flap)).toBe(false);
    log.push('<debug> [1.4] dispatcher: (10) failed (after 0.1 sec): a script failed');
    expect(nmDispatchDone(log.join('\n'), flap)).toBe(true);
  });
});

describe("netplan: networkd-dispatcher handled networkd's latest report", () => {
  const list = (ib0: string, ib1: string) =>
    parseNetworkctlList(
      ['  1 lo    loopback carrier     unmanaged', `  3 ib1   ether    ${ib1}`, `  4 ib0   ether    ${ib0}`].join('\n'),
    );
  const records = (ib0: string, ib1: string) =>
    new Map([
      ['ib0', parseDispatchRecord(ib0)!],
      ['ib1', parseDispatchRecord(ib1)!],
    ]);
  const mark = {
    manager: 'netplan',
    handled: new Map([
      ['ib0', 3],
      ['ib1', 3],
    ]),
    links: list('routable configured', 'routable configured'),
    managed: new Set(['ib0', 'ib1']),
  } as const;
  const restart = { kind: 'restart' } as const;
  const flap = { kind: 'flap', iface: 'ib0' } as const;

  it('reads networkctl list and the records', () => {
    expect(list('routable configured', '- unmanaged').get('ib0')).toEqual({
      operational: 'routable',
      setup: 'configured',
    });
    expect(parseDispatchRecord('4 configured routable\n')).toEqual({
      handled: 4,
      administrative: 'configured',
      operational: 'routable',
    });
    expect(parseDispatchRecord('')).toBeUndefined();
  });

  it('a restart: done once networkd is back where it was and the dispatcher knows it, heard or not', () => {
    const configuring = list('routable configuring', 'routable configuring');
    const known = records('3 configured routable', '3 configured routable');
    // networkd still configuring: its `configured` is yet to come, and to be handled.
    expect(networkdDispatchDone(mark, restart, ['ib0'], configuring, known)).toBe(false);
    const configured = list('routable configured', 'routable configured');
    // Debian 13 without systemd: the dispatcher heard nothing, and knows networkd's state.
    expect(networkdDispatchDone(mark, restart, ['ib0', 'ib1'], configured, known)).toBe(true);
    // It heard `configuring` and not yet `configured`: the configured.d hooks are still to run.
    const behind = records('4 configuring routable', '3 configured routable');
    expect(networkdDispatchDone(mark, restart, ['ib0'], configured, behind)).toBe(false);
    expect(networkdDispatchDone(mark, restart, ['ib1'], configured, behind)).toBe(true);
  });

  it('a flap: not done before a report since, while the NIC is short of its state before, or the dispatcher behind', () => {
    const configured = list('routable configured', 'routable configured');
    expect(
      networkdDispatchDone(mark, flap, ['ib0'], configured, records('3 configured routable', '3 configured routable')),
    ).toBe(false);
    const behind = records('5 configured no-carrier', '3 configured routable');
    expect(
      networkdDispatchDone(mark, flap, ['ib0'], list('no-carrier configured', 'routable configured'), behind),
    ).toBe(false);
    expect(networkdDispatchDone(mark, flap, ['ib0'], configured, behind)).toBe(false);
    expect(
      networkdDispatchDone(mark, flap, ['ib0'], configured, records('6 configured routable', '3 configured routable')),
    ).toBe(true);
  });
});
