import { describe, expect, it } from 'vitest'
import { ConfigError } from '../diagnostics/errors.js'
import { ClientAddressError, ipKey, ipv6SubnetOption, parseIp } from './client-ip.js'

describe('ipKey', () => {
  it('keeps IPv4 addresses as they are', () => {
    expect(ipKey('203.0.113.9')).toBe('203.0.113.9')
    expect(ipKey('0.0.0.0')).toBe('0.0.0.0')
  })

  it('folds IPv4-mapped IPv6 to IPv4, whatever the notation', () => {
    expect(ipKey('::ffff:203.0.113.9')).toBe('203.0.113.9')
    expect(ipKey('::FFFF:cb00:7109')).toBe('203.0.113.9')
    expect(ipKey('0:0:0:0:0:ffff:203.0.113.9')).toBe('203.0.113.9')
    expect(ipKey('[::ffff:203.0.113.9]:443')).toBe('203.0.113.9')
  })

  it('does not treat other IPv6 addresses with a dotted tail as IPv4', () => {
    expect(ipKey('2001:db8::203.0.113.9', false)).toBe('2001:db8::cb00:7109')
    expect(ipKey('::203.0.113.9', false)).toBe('::cb00:7109')
  })

  it('groups IPv6 by /56 by default', () => {
    expect(ipKey('2001:db8:abcd:12ff:1:2:3:4')).toBe('2001:db8:abcd:1200::/56')
    expect(ipKey('2001:db8:abcd:1234::1')).toBe('2001:db8:abcd:1200::/56')
    expect(ipKey('2001:db8:abcd:1300::1')).toBe('2001:db8:abcd:1300::/56')
  })

  it('uses the configured prefix, or the whole address with false', () => {
    expect(ipKey('2001:db8:abcd:12ff::1', 64)).toBe('2001:db8:abcd:12ff::/64')
    expect(ipKey('2001:db8:abcd:12ff::1', 48)).toBe('2001:db8:abcd::/48')
    expect(ipKey('2001:db8:abcd:12ff::1', 32)).toBe('2001:db8::/32')
    expect(ipKey('2001:DB8:0:0:1:0:0:1', false)).toBe('2001:db8::1:0:0:1')
  })

  it('drops brackets, ports and zone ids', () => {
    expect(ipKey('[2001:db8::1]:8080', false)).toBe('2001:db8::1')
    expect(ipKey('[2001:db8::1]', false)).toBe('2001:db8::1')
    expect(ipKey('fe80::1%eth0', false)).toBe('fe80::1')
    expect(ipKey('[fe80::1%25eth0]:80', false)).toBe('fe80::1')
    expect(ipKey('198.51.100.7:51234')).toBe('198.51.100.7')
    expect(ipKey('  198.51.100.7 ')).toBe('198.51.100.7')
  })

  it('writes IPv6 in RFC 5952 form', () => {
    expect(ipKey('::1', false)).toBe('::1')
    expect(ipKey('::', false)).toBe('::')
    expect(ipKey('1:0:0:2:0:0:0:3', false)).toBe('1:0:0:2::3')
    expect(ipKey('1:0:2:3:4:5:6:7', false)).toBe('1:0:2:3:4:5:6:7')
    expect(ipKey('1:0:0:2:3:0:0:4', false)).toBe('1::2:3:0:0:4')
  })

  it('returns undefined for anything that is not an address', () => {
    for (const bad of [
      undefined,
      null,
      '',
      'localhost',
      '1.2.3',
      '1.2.3.4.5',
      '256.1.1.1',
      '01.2.3.4',
      '1.2.3.4:',
      '1:2:3:4:5:6:7:8:9',
      '1::2::3',
      ':1:2:3:4:5:6:7',
      '12345::1',
      '[::1',
      '[::1]x',
      'g::1',
      '::ffff:1.2.3.256',
      '1:2:3:4:5:6:7::8',
    ]) {
      expect(ipKey(bad), String(bad)).toBeUndefined()
    }
  })
})

describe('parseIp', () => {
  it('returns groups or octets', () => {
    expect(parseIp('1::ffff')).toEqual({ version: 6, groups: [1, 0, 0, 0, 0, 0, 0, 0xffff] })
    expect(parseIp('10.0.0.1')).toEqual({ version: 4, octets: [10, 0, 0, 1] })
  })
})

describe('ipv6SubnetOption', () => {
  it('defaults to 56 and accepts 32 to 64 or false', () => {
    expect(ipv6SubnetOption(undefined)).toBe(56)
    expect(ipv6SubnetOption(32)).toBe(32)
    expect(ipv6SubnetOption(64)).toBe(64)
    expect(ipv6SubnetOption(false)).toBe(false)
  })

  it('rejects other values with a ConfigError', () => {
    for (const bad of [31, 65, 56.5, '56', true, 0]) {
      expect(() => ipv6SubnetOption(bad)).toThrow(ConfigError)
    }
    expect(() => ipv6SubnetOption(128)).toThrow(/ipv6Subnet must be a whole number from 32 to 64.*got 128/)
  })
})

describe('ClientAddressError', () => {
  it('says where the address came from and what to do', () => {
    const error = new ClientAddressError('@sluice/express', 'req.ip', undefined)
    expect(error.message).toMatch(/^@sluice\/express could not find the client's IP address \(req.ip is undefined\)/)
    expect(error.message).toMatch(/Pass a key function/)
  })
})
