import { ALGORITHMS, parsePolicies } from '@sluice/core'
import { describe, expect, it } from 'vitest'
import { ALGORITHM_CODES, isSlidingLogLua, POLICY_BYTES, policyLua, policyRecords, WARM_CODES } from './protocol.js'

/** The byte (1-based) a generated accessor of record 1 reads from, as Lua would. */
const offsetOf = (lua: string) => Number(/policies, (\d+)\)/.exec(lua)?.[1])

describe('the policy record', () => {
  const set = parsePolicies([
    { limit: 7, window: 3000, algorithm: 'sliding-window', precision: 3 },
    { limit: 5, window: 1000, algorithm: 'token-bucket', burst: 9, maxDelay: 400 },
    { limit: 4, window: 2000, algorithm: 'sliding-log', blockFor: 700 },
    { limit: 6, window: 1500, algorithm: 'fixed-window', start: 'first-request' },
    { limit: 8, window: 1000, algorithm: 'gcra', warmup: 3000, coldFactor: 2 },
  ])
  const records = policyRecords(set)

  it('is read by the generated accessors where policyRecords wrote each field', () => {
    expect(records.length).toBe(5 * POLICY_BYTES)
    for (const [i, policy] of set.policies.entries()) {
      const fields = [
        'limit',
        'window',
        'burst',
        'precision',
        'maxDelay',
        'blockFor',
        'offset',
        'warmup',
        'coldFactor',
      ] as const
      for (const field of fields) {
        const at = offsetOf(policyLua(String(i + 1), [field])) - 1
        expect(records.readDoubleLE(at)).toBe(policy[field])
      }
      const code = offsetOf(policyLua(String(i + 1), ['code'])) - 1
      expect(records.readDoubleLE(code)).toBe(
        policy.warmup > 0 ? WARM_CODES[policy.algorithm as 'gcra'] : ALGORITHM_CODES[policy.algorithm],
      )
      const firstRequest = offsetOf(policyLua(String(i + 1), ['firstRequest'])) - 1
      expect(records.readDoubleLE(firstRequest)).toBe(policy.start === 'first-request' ? 1 : 0)
    }
  })

  it('writes Lua offsets for a record index the script only knows at run time', () => {
    expect(policyLua('i', ['code', 'limit', 'window'])).toBe("struct.unpack('<ddd', policies, 88 * i - 87)")
    expect(policyLua('i', ['blockFor'])).toBe("struct.unpack('<d', policies, 88 * i - 39)")
    expect(policyLua('i', ['offset', 'firstRequest'])).toBe("struct.unpack('<dd', policies, 88 * i - 31)")
    expect(() => policyLua('i', ['code', 'window'])).toThrow(/not in record order/)
  })

  it("tells a sliding log by one byte of its code that no other algorithm's code has", () => {
    const lua = isSlidingLogLua('1')
    const [, at, value] = /string\.byte\(policies, (\d+)\) == (\d+)/.exec(lua) ?? []
    for (const algorithm of ALGORITHMS) {
      const record = policyRecords(parsePolicies({ limit: 3, window: 1000, algorithm }))
      expect(record[Number(at) - 1] === Number(value)).toBe(algorithm === 'sliding-log')
    }
  })
})
