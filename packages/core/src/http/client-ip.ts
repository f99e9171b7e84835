import { ConfigError } from '../diagnostics/errors.js'

/** IPv6 prefix that keys one subscriber by default: ISPs commonly delegate a /56 or larger. */
export const DEFAULT_IPV6_SUBNET = 56
/** The shortest IPv6 prefix `ipv6Subnet` accepts. */
export const MIN_IPV6_SUBNET = 32
/** The longest IPv6 prefix `ipv6Subnet` accepts. */
export const MAX_IPV6_SUBNET = 64

/** An IP address as `parseIp` reads it: IPv4 octets or IPv6 groups. */
export type ParsedIp =
  | { readonly version: 4; readonly octets: readonly number[] }
  | {
      readonly version: 6
      /** Eight 16-bit groups. */
      readonly groups: readonly number[]
    }

/**
 * Checks an `ipv6Subnet` option: a prefix length from 32 to 64, or `false` to key every IPv6
 * address on its own. `undefined` gives the default, /56.
 */
export function ipv6SubnetOption(value: unknown, field = 'ipv6Subnet'): number | false {
  if (value === undefined) return DEFAULT_IPV6_SUBNET
  if (value === false) return false
  if (typeof value !== 'number' || !Number.isInteger(value) || value < MIN_IPV6_SUBNET || value > MAX_IPV6_SUBNET) {
    throw new ConfigError(
      field,
      value,
      `must be a whole number from ${MIN_IPV6_SUBNET} to ${MAX_IPV6_SUBNET} (48, 56, 60 and 64 are common), or false to key each IPv6 address alone`,
    )
  }
  return value
}

/**
 * The rate-limit key for a client address: IPv4 as dotted decimal, `::ffff:a.b.c.d` (in any
 * notation) folded to its IPv4 address, any other IPv6 address reduced to its network,
 * e.g. `2001:db8:0:ab00::/56`, so that one subscriber cannot rotate through its prefix.
 * Brackets, ports (`[::1]:80`, `1.2.3.4:80`) and zone ids (`fe80::1%eth0`) are dropped.
 * Returns `undefined` when the input is not an IP address, so callers decide how to fail.
 */
export function ipKey(
  address: string | undefined | null,
  ipv6Subnet: number | false = DEFAULT_IPV6_SUBNET,
): string | undefined {
  if (typeof address !== 'string') return undefined
  const ip = parseIp(address)
  if (ip === undefined) return undefined
  if (ip.version === 4) return ip.octets.join('.')
  if (ipv6Subnet === false) return formatIpv6(ip.groups)
  return `${formatIpv6(maskGroups(ip.groups, ipv6Subnet))}/${ipv6Subnet}`
}

/** Parses an address as found in sockets and proxy headers; `undefined` if it is not one. */
export function parseIp(input: string): ParsedIp | undefined {
  const text = stripDecorations(input.trim())
  if (text === undefined) return undefined
  if (!text.includes(':')) {
    const octets = parseIpv4(text)
    return octets && { version: 4, octets }
  }
  const groups = parseIpv6(text)
  if (groups === undefined) return undefined
  // Decided by the bits, not the notation: ::ffff:102:304 is 1.2.3.4 too.
  if (groups.slice(0, 5).every((g) => g === 0) && groups[5] === 0xffff) {
    const high = groups[6] as number
    const low = groups[7] as number
    return { version: 4, octets: [high >> 8, high & 0xff, low >> 8, low & 0xff] }
  }
  return { version: 6, groups }
}

/** Removes `[...]` with an optional port, an IPv4 port, and an IPv6 zone id. */
function stripDecorations(text: string): string | undefined {
  let address = text
  if (address.startsWith('[')) {
    const end = address.indexOf(']')
    if (end < 0) return undefined
    const rest = address.slice(end + 1)
    if (rest !== '' && !/^:\d{1,5}$/.test(rest)) return undefined
    address = address.slice(1, end)
  } else {
    const v4WithPort = /^([\d.]+):\d{1,5}$/.exec(address)
    if (v4WithPort) address = v4WithPort[1] as string
  }
  const zone = address.indexOf('%')
  if (zone >= 0) address = address.slice(0, zone)
  return address
}

function parseIpv4(text: string): number[] | undefined {
  const parts = text.split('.')
  if (parts.length !== 4) return undefined
  const octets: number[] = []
  for (const part of parts) {
    // Leading zeros are rejected: some parsers read them as octal.
    if (!/^(0|[1-9]\d{0,2})$/.test(part)) return undefined
    const value = Number(part)
    if (value > 255) return undefined
    octets.push(value)
  }
  return octets
}

function parseIpv6(text: string): number[] | undefined {
  let body = text.toLowerCase()
  const tail: number[] = []
  const lastColon = body.lastIndexOf(':')
  if (body.slice(lastColon + 1).includes('.')) {
    const octets = parseIpv4(body.slice(lastColon + 1))
    if (octets === undefined) return undefined
    tail.push(
      ((octets[0] as number) << 8) | (octets[1] as number),
      ((octets[2] as number) << 8) | (octets[3] as number),
    )
    // Keep the colon when it is part of '::' so the split below still sees it.
    body = body.endsWith('::', lastColon + 1) ? body.slice(0, lastColon + 1) : body.slice(0, lastColon)
  }
  const halves = body.split('::')
  if (halves.length > 2) return undefined
  const head = parseGroups(halves[0] as string)
  const rest = halves.length === 2 ? parseGroups(halves[1] as string) : []
  if (head === undefined || rest === undefined) return undefined
  const given = head.length + rest.length + tail.length
  if (halves.length === 2 ? given > 7 : given !== 8) return undefined
  return [...head, ...new Array<number>(8 - given).fill(0), ...rest, ...tail]
}

function parseGroups(text: string): number[] | undefined {
  if (text === '') return []
  const groups: number[] = []
  for (const part of text.split(':')) {
    if (!/^[0-9a-f]{1,4}$/.test(part)) return undefined
    groups.push(Number.parseInt(part, 16))
  }
  return groups
}

function maskGroups(groups: readonly number[], prefix: number): number[] {
  return groups.map((group, i) => {
    const bits = Math.min(16, Math.max(0, prefix - i * 16))
    return group & ((0xffff << (16 - bits)) & 0xffff)
  })
}

/** RFC 5952 text: lowercase, no leading zeros, the longest run of two or more zero groups as `::`. */
function formatIpv6(groups: readonly number[]): string {
  let bestStart = -1
  let bestLength = 1
  for (let i = 0; i < groups.length; ) {
    if (groups[i] !== 0) {
      i++
      continue
    }
    let j = i
    while (j < groups.length && groups[j] === 0) j++
    if (j - i > bestLength) {
      bestStart = i
      bestLength = j - i
    }
    i = j
  }
  const hex = groups.map((g) => g.toString(16))
  if (bestStart < 0) return hex.join(':')
  return `${hex.slice(0, bestStart).join(':')}::${hex.slice(bestStart + bestLength).join(':')}`
}

/**
 * The default key needs the client's IP and the framework has none (a destroyed socket, a
 * runtime without connection info) or it is not an IP address.
 */
export class ClientAddressError extends Error {
  override readonly name = 'ClientAddressError'
  constructor(
    packageName: string,
    source: string,
    readonly address: string | undefined,
  ) {
    super(
      `${packageName} could not find the client's IP address (${source} is ${address === undefined ? 'undefined' : JSON.stringify(address)}). ` +
        'Pass a key function that identifies the client, e.g. rateLimit({ limits, key: (request) => userId }).',
    )
  }
}
