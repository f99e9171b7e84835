// A Cloudflare Workers module: the Hono example app, unchanged. On a real deployment the memory
// store lives in one isolate and Cloudflare runs many, so these limits are per isolate; use a
// shared store for global limits.
export { default } from '../hono-node/app.js'
