export declare const PROMTOOL: string
export declare function ensurePromtool(): string
export declare function checkMetrics(exposition: string): string
