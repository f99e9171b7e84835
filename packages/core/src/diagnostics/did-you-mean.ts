/**
 * The candidate closest to `typed` by edit distance (insertions, deletions, substitutions and
 * swaps of neighbours, case ignored), when it is close enough to be a slip of the keyboard: none
 * for one or two letters, one for up to five, two beyond. Undefined otherwise.
 */
export function didYouMean(typed: string, candidates: readonly string[]): string | undefined {
  const limit = typed.length <= 2 ? 0 : typed.length <= 5 ? 1 : 2
  let best: string | undefined
  let bestDistance = limit + 1
  for (const candidate of candidates) {
    const distance = editDistance(typed.toLowerCase(), candidate.toLowerCase())
    if (distance < bestDistance) {
      best = candidate
      bestDistance = distance
    }
  }
  return best
}

/** Optimal string alignment distance: Levenshtein plus one edit for two neighbours swapped. */
function editDistance(a: string, b: string): number {
  let before: number[] = []
  let previous = Array.from({ length: b.length + 1 }, (_, j) => j)
  for (let i = 1; i <= a.length; i++) {
    const row = [i]
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1
      let d = Math.min((previous[j] as number) + 1, (row[j - 1] as number) + 1, (previous[j - 1] as number) + cost)
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1])
        d = Math.min(d, (before[j - 2] as number) + 1)
      row.push(d)
    }
    before = previous
    previous = row
  }
  return previous[b.length] as number
}
