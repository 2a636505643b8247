export declare const SOFTHSM_MODULE: string
export declare function ensureSoftHsm(): string
export declare function createToken(options: { label: string; pin: string }): {
  conf: string
  pinFile: string
  module: string
  directory: string
  tokens: string
}
