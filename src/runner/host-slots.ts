/**
 * A bound on what runs at once on each host, for work that spans several hosts: a piece of work
 * names how many of each host's slots it takes, and starts only when every one of them is free,
 * all taken together. Nothing holds a slot while it waits for another, so pieces never wait on
 * each other in a circle; a piece that fits starts even while an earlier one waits (the set of
 * pieces is finite, so the one waiting starts once the pieces ahead of it end).
 */
export class HostSlots {
  private readonly used = new Map<number, number>();
  private readonly waiting: { readonly needs: ReadonlyMap<number, number>; readonly start: () => void }[] = [];

  constructor(private readonly perHost: number) {}

  /** Runs `work` once `needs` (host → slots) are free; the slots are given back when it ends, however. */
  async run<T>(needs: ReadonlyMap<number, number>, work: () => Promise<T>): Promise<T> {
    await new Promise<void>((start) => {
      this.waiting.push({ needs, start });
      this.grant();
    });
    try {
      return await work();
    } finally {
      for (const [host, n] of needs) this.used.set(host, (this.used.get(host) ?? 0) - n);
      this.grant();
    }
  }

  /** Whether `needs` fit beside what runs: never above perHost on a host, but a piece asking more than that runs there alone. */
  private fits(needs: ReadonlyMap<number, number>): boolean {
    for (const [host, n] of needs) {
      const used = this.used.get(host) ?? 0;
      if (used > 0 && used + n > this.perHost) return false;
    }
    return true;
  }

  private grant(): void {
    for (let i = 0; i < this.waiting.length;) {
      const piece = this.waiting[i]!;
      if (!this.fits(piece.needs)) {
        i++;
        continue;
      }
      for (const [host, n] of piece.needs) this.used.set(host, (this.used.get(host) ?? 0) + n);
      this.waiting.splice(i, 1);
      piece.start();
    }
  }
}
