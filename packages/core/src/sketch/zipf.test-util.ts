/** A Zipf(s) sampler over ranks 0..n-1 driven by a seeded xorshift PRNG, for reproducible streams. */
export function zipfSampler(n: number, s: number, seed: number): () => number {
  const cdf = new Float64Array(n)
  let total = 0
  for (let k = 0; k < n; k++) {
    total += 1 / (k + 1) ** s
    cdf[k] = total
  }
  let state = seed | 0 || 1
  return () => {
    state ^= state << 13
    state ^= state >>> 17
    state ^= state << 5
    const target = ((state >>> 0) / 4294967296) * total
    let lo = 0
    let hi = n - 1
    while (lo < hi) {
      const mid = (lo + hi) >>> 1
      if ((cdf[mid] as number) < target) lo = mid + 1
      else hi = mid
    }
    return lo
  }
}
