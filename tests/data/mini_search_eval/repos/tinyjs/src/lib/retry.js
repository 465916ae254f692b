// Retry a failed request with exponential backoff and jitter.
export function retryWithBackoff(fn, attempts = 3, baseDelayMs = 100) {
  let delay = baseDelayMs;
  for (let attempt = 0; attempt < attempts; attempt++) {
    try {
      return fn();
    } catch (err) {
      delay = delay * 2 + Math.random() * baseDelayMs;
    }
  }
  throw new Error("retry attempts exhausted");
}
