/**
 * What verify's scripts print, read: a host's capabilities (an RDMA device, rping), and cell
 * results framed between CELL_MARK lines, as they stream in or from a finished script. Pure.
 */
import { CELL_END_MARK } from '../render/verify-scripts.js';

export interface Capabilities {
  readonly rdmaDevices: readonly string[];
  readonly rping: boolean;
  readonly ping: boolean;
}

export function parseCapabilities(output: string): Capabilities {
  const value = (key: string) => new RegExp(`^${key}=(.*)$`, 'm').exec(output)?.[1]?.trim() ?? '';
  return {
    rdmaDevices: value('rdma-devices').split(/\s+/).filter(Boolean),
    rping: value('rping') !== '',
    ping: value('ping') !== '',
  };
}

/** Why a host cannot take part in an rping cell, or undefined when it can. */
export function rpingUnavailable(host: string, caps: Capabilities): string | undefined {
  if (caps.rdmaDevices.length === 0) return `no RDMA device on ${host} (/sys/class/infiniband is empty)`;
  if (!caps.rping) return `rping is not installed on ${host} (apt install rdmacm-utils)`;
  return undefined;
}

export interface CellOutput {
  readonly id: number;
  readonly exitCode: number | null;
  readonly output: string;
}

/** Reads cell results line by line as they stream in; `onCell` fires as each one ends. */
export class CellStream {
  private current: { id: number; exitCode: number | null; lines: string[] } | undefined;
  constructor(private readonly onCell: (cell: CellOutput) => void) {}

  push(line: string): void {
    const mark = /^@@cell (\d+) (\d*)$/.exec(line);
    if (mark) {
      this.current = { id: Number(mark[1]), exitCode: mark[2] === '' ? null : Number(mark[2]), lines: [] };
    } else if (line === CELL_END_MARK && this.current) {
      const { id, exitCode, lines } = this.current;
      this.current = undefined;
      this.onCell({ id, exitCode, output: lines.join('\n') });
    } else this.current?.lines.push(line);
  }
}

/** All cell results of a finished script. */
export function parseCellOutput(output: string): Map<number, CellOutput> {
  const results = new Map<number, CellOutput>();
  const stream = new CellStream((c) => results.set(c.id, c));
  for (const line of output.split('\n')) stream.push(line);
  return results;
}
