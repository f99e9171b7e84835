export type {
  ActiveClientsSync,
  AdmissionControlOptions,
  AdmissionEvent,
  AdmissionInfo,
  AdmissionState,
  ThrottlingProblem,
} from '../http/admission.js'
export { DEFAULT_RESUME_FRACTION, THROTTLING_MODE, throttlingProblem } from '../http/admission.js'
export type { BloomShape } from '../sketch/bloom.js'
export { bloomShape, estimateCount } from '../sketch/bloom.js'
export type { ActiveClientsOptions, SlotChanges } from './active-clients.js'
export {
  ActiveClients,
  DEFAULT_ACTIVE_SLOTS,
  DEFAULT_ACTIVE_WINDOW,
  DEFAULT_FALSE_POSITIVE_RATE,
  MAX_ACTIVE_CLIENTS_BYTES,
  MAX_ACTIVE_SLOTS,
} from './active-clients.js'
