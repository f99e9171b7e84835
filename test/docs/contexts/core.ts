declare const createLimiter: typeof import('@sluice/core').createLimiter
declare const MemoryStore: typeof import('@sluice/core').MemoryStore
declare const ip: string
declare const user: string
declare const origin: string
declare function shed(): void
