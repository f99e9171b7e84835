import {
  type DynamicModule,
  type InjectionToken,
  Module,
  type ModuleMetadata,
  type OptionalFactoryDependency,
} from '@nestjs/common'
import { ModulesContainer } from '@nestjs/core'
import { RateLimitGuard } from './guard.js'
import { checkNestOptions, type SluiceModuleOptions } from './options.js'
import { RateLimits, SLUICE_OPTIONS } from './rate-limits.js'

/** `SluiceModule.forRootAsync()`'s options: a factory of the module's options and what it injects. */
export interface SluiceModuleAsyncOptions extends Pick<ModuleMetadata, 'imports'> {
  useFactory: (...args: never[]) => SluiceModuleOptions | Promise<SluiceModuleOptions>
  inject?: (InjectionToken | OptionalFactoryDependency)[]
}

const exports = [RateLimits, RateLimitGuard, SLUICE_OPTIONS]
const providers = [
  {
    provide: RateLimits,
    useFactory: (options: SluiceModuleOptions, modules: ModulesContainer) => new RateLimits(options, modules),
    inject: [SLUICE_OPTIONS, ModulesContainer],
  },
  RateLimitGuard,
]

/**
 * The app's rate limits: `SluiceModule.forRoot({ limits: ['100/min'] })` in the root module's
 * imports, then `RateLimitGuard` as `APP_GUARD` (or `@UseGuards(RateLimitGuard)` per controller).
 * Global, so the guard can be used in every module.
 */
// biome-ignore lint/complexity/noStaticOnlyClass: a Nest module is a class; forRoot() is how Nest modules take options.
export class SluiceModule {
  static forRoot(options: SluiceModuleOptions = {}): DynamicModule {
    checkNestOptions(options, 'SluiceModule.forRoot()')
    return {
      module: SluiceModule,
      global: true,
      providers: [{ provide: SLUICE_OPTIONS, useValue: options }, ...providers],
      exports,
    }
  }

  /** Options made by a factory that may inject what it needs (a ConfigService, a Redis client). */
  static forRootAsync(options: SluiceModuleAsyncOptions): DynamicModule {
    const { useFactory, inject = [], imports = [] } = options
    if (typeof useFactory !== 'function') {
      checkNestOptions({}, 'SluiceModule.forRootAsync()')
      throw new TypeError('SluiceModule.forRootAsync() needs useFactory: (...injected) => the module options')
    }
    const options$ = {
      provide: SLUICE_OPTIONS,
      useFactory: async (...args: never[]) => {
        const resolved = await useFactory(...args)
        checkNestOptions(resolved, 'SluiceModule.forRootAsync() useFactory')
        return resolved
      },
      inject,
    }
    return { module: SluiceModule, global: true, imports, providers: [options$, ...providers], exports }
  }
}

Module({})(SluiceModule)
