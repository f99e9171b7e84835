/** CRC16-CCITT (XMODEM), the checksum Redis Cluster takes modulo 16384 to place a key. */
function crc16(bytes: Uint8Array): number {
  let crc = 0
  for (const byte of bytes) {
    crc ^= byte << 8
    for (let bit = 0; bit < 8; bit++) crc = crc & 0x8000 ? ((crc << 1) ^ 0x1021) & 0xffff : (crc << 1) & 0xffff
  }
  return crc
}

const encoder = new TextEncoder()

/** The Cluster slot of every key whose hash tag is `{tag}` (tag non-empty). */
export function slotOf(tag: string): number {
  return crc16(encoder.encode(tag)) % 16384
}

/** The Cluster slot of `key`: of its hash tag (the first non-empty `{…}`), else of the whole key. */
export function keySlot(key: string): number {
  const open = key.indexOf('{')
  const close = open < 0 ? -1 : key.indexOf('}', open + 1)
  return slotOf(close > open + 1 ? key.slice(open + 1, close) : key)
}
