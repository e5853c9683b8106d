/** Medians, ranges and the fit of cost against fleet size. Pure. */

export interface Spread {
  readonly median: number;
  readonly min: number;
  readonly max: number;
  readonly n: number;
}

export function spread(values: readonly number[]): Spread | null {
  const finite = values.filter((v) => Number.isFinite(v)).sort((a, b) => a - b);
  if (finite.length === 0) return null;
  const mid = Math.floor(finite.length / 2);
  const median = finite.length % 2 ? finite[mid]! : (finite[mid - 1]! + finite[mid]!) / 2;
  return { median, min: finite[0]!, max: finite[finite.length - 1]!, n: finite.length };
}

export interface LinearFit {
  /** y = intercept + slope·N */
  readonly intercept: number;
  readonly slope: number;
  /** Coefficient of determination of the straight line. */
  readonly r2: number;
  /** Exponent b of y = a·N^b fitted on logs: 1 is proportional, below 1 a fixed cost dominating, above 1 super-linear. */
  readonly exponent: number;
  /** Cost per added host between the two smallest sizes and between the two largest: equal when growth is linear. */
  readonly marginalFirst: number;
  readonly marginalLast: number;
  readonly verdict: 'linear' | 'super-linear' | 'sub-linear' | 'too few points';
}

export function fitLinear(points: readonly { n: number; y: number }[]): LinearFit {
  const pts = [...points].filter((p) => Number.isFinite(p.y)).sort((a, b) => a.n - b.n);
  const k = pts.length;
  const mean = (f: (p: { n: number; y: number }) => number) => pts.reduce((s, p) => s + f(p), 0) / k;
  const mx = mean((p) => p.n);
  const my = mean((p) => p.y);
  const sxx = pts.reduce((s, p) => s + (p.n - mx) ** 2, 0);
  const sxy = pts.reduce((s, p) => s + (p.n - mx) * (p.y - my), 0);
  const syy = pts.reduce((s, p) => s + (p.y - my) ** 2, 0);
  const slope = sxx === 0 ? Number.NaN : sxy / sxx;
  const intercept = my - slope * mx;
  const r2 = syy === 0 ? 1 : (sxy * sxy) / (sxx * syy);
  const logs = pts.filter((p) => p.y > 0).map((p) => ({ x: Math.log(p.n), y: Math.log(p.y) }));
  const lx = logs.reduce((s, p) => s + p.x, 0) / logs.length;
  const ly = logs.reduce((s, p) => s + p.y, 0) / logs.length;
  const lsxx = logs.reduce((s, p) => s + (p.x - lx) ** 2, 0);
  const exponent = lsxx === 0 ? Number.NaN : logs.reduce((s, p) => s + (p.x - lx) * (p.y - ly), 0) / lsxx;
  const marginal = (a: { n: number; y: number } | undefined, b: { n: number; y: number } | undefined) =>
    a && b && b.n !== a.n ? (b.y - a.y) / (b.n - a.n) : Number.NaN;
  const marginalFirst = marginal(pts[0], pts[1]);
  const marginalLast = marginal(pts[k - 2], pts[k - 1]);
  let verdict: LinearFit['verdict'] = 'too few points';
  if (k >= 3) {
    // Linear: the line explains the points and the last hosts cost about what the first ones did.
    const ratio = marginalLast / marginalFirst;
    if (r2 >= 0.98 && ratio <= 1.5 && ratio >= 1 / 1.5) verdict = 'linear';
    else verdict = ratio > 1 ? 'super-linear' : 'sub-linear';
  }
  return { intercept, slope, r2, exponent, marginalFirst, marginalLast, verdict };
}
