/**
 * A frame-based spinner: the TUI's one shared interval advances a frame counter, every spinner
 * draws from it. No timer per row, no extra package.
 */
export const SPINNER_FRAMES = ['⠋', '⠙', '⠹', '⠸', '⠼', '⠴', '⠦', '⠧', '⠇', '⠏'] as const;

export function spinnerGlyph(frame: number): string {
  const n = SPINNER_FRAMES.length;
  return SPINNER_FRAMES[((Math.floor(frame) % n) + n) % n]!;
}
