// A Durable Object storage in a Map, for tests of the object and the store in Node.
import type { DurableObjectStorageLike } from './types.js'

/** A Map with the storage API; reads answer after a macrotask, so callers can interleave. */
export class FakeStorage implements DurableObjectStorageLike {
  readonly data = new Map<string, unknown>()
  alarm: number | null = null
  reads = 0

  async get<T>(key: string): Promise<T | undefined> {
    this.reads++
    const value = this.data.get(key)
    await new Promise((resolve) => setImmediate(resolve))
    return value === undefined ? undefined : (structuredClone(value) as T)
  }
  async put<T>(key: string, value: T): Promise<void> {
    this.data.set(key, structuredClone(value))
  }
  async delete(keys: string[]): Promise<number> {
    return keys.filter((key) => this.data.delete(key)).length
  }
  async list<T>(options: { prefix?: string; startAfter?: string; limit?: number } = {}): Promise<Map<string, T>> {
    const names = [...this.data.keys()]
      .filter((name) => name.startsWith(options.prefix ?? '') && (options.startAfter ?? '') < name)
      .sort()
      .slice(0, options.limit)
    return new Map(names.map((name) => [name, structuredClone(this.data.get(name)) as T]))
  }
  async getAlarm(): Promise<number | null> {
    return this.alarm
  }
  async setAlarm(at: number): Promise<void> {
    this.alarm = at
  }
}
