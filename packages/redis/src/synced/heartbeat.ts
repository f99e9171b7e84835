/** A node missing this long is not counted alive. */
export const NODE_TTL_MS = 5000

/** The heartbeat's keys: the set of live nodes and the epoch, sharing the `{sluice-nodes}` hash tag. */
export function heartbeatKeys(prefix: string): [live: string, epoch: string] {
  return [`${prefix}{sluice-nodes}:live`, `${prefix}{sluice-nodes}:epoch`]
}

/** The hot keys' sets (see HEARTBEAT_LUA), beside the heartbeat's under the same hash tag: by end, and by announcement. */
export function hotSetKeys(prefix: string): [byEnd: string, byAnnouncement: string] {
  return [`${prefix}{sluice-nodes}:hot`, `${prefix}{sluice-nodes}:hot-since`]
}
