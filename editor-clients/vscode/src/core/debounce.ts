/** A trailing-edge debouncer with injectable timers (so tests need no real waiting). */

export interface Timers {
  set(fn: () => void, ms: number): unknown;
  clear(handle: unknown): void;
}

export const realTimers: Timers = {
  set: (fn, ms) => setTimeout(fn, ms),
  clear: (handle) => clearTimeout(handle as ReturnType<typeof setTimeout>),
};

export class Debouncer {
  private handle: unknown;

  constructor(
    private readonly delayMs: number,
    private readonly timers: Timers = realTimers,
  ) {}

  /** Run `fn` once no other call came in for `delayMs`; a newer call replaces an older one. */
  schedule(fn: () => void): void {
    this.cancel();
    this.handle = this.timers.set(() => {
      this.handle = undefined;
      fn();
    }, this.delayMs);
  }

  /** Drop the pending call, if any. */
  cancel(): void {
    if (this.handle !== undefined) this.timers.clear(this.handle);
    this.handle = undefined;
  }

  get pending(): boolean {
    return this.handle !== undefined;
  }
}
