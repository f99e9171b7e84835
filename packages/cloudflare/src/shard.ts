/**
 * The shard of `key` among `shards`: FNV-1a (32 bits) over its UTF-16 code units, modulo the
 * count. Stable across isolates and releases, so a key always reaches the same object.
 */
export function shardOf(key: string, shards: number): number {
  let hash = 0x811c9dc5
  for (let i = 0; i < key.length; i++) {
    hash ^= key.charCodeAt(i)
    hash = Math.imul(hash, 0x01000193)
  }
  return (hash >>> 0) % shards
}
