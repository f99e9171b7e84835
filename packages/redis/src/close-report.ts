/**
 * What a `close()` left undone. Every close resolves within its timeout (SyncedStore's and
 * FleetSize's: 2 s) whatever Redis does, with this report; what Redis did not acknowledge by then
 * is lost with the process (a reply that lands later still counts).
 */
export interface CloseReport {
  /** Redis acknowledged everything below in time. */
  readonly complete: boolean
  /** Keys with counts Redis had not acknowledged (SyncedStore's windows): the fleet never sees them. */
  readonly unsentKeys: number
  /** Keys whose leased units (token bucket, GCRA) were not given back: spent for the fleet until the bucket refills them. */
  readonly unreturnedLeases: number
  /** This process left the set of live processes; if not, the others count it until its heartbeat expires (5 s). */
  readonly left: boolean
}

/** How long a close waits for Redis in all (SyncedStore's sync timeout). */
export const CLOSE_TIMEOUT_MS = 2000
