// Plain Node ESM, no DOM: imports a package by name and prints what it exports.
const specifier = process.argv[2]
const module = await import(specifier)
console.log(
  JSON.stringify({
    dom: { window: typeof window, document: typeof document },
    exports: Object.fromEntries(Object.entries(module).map(([name, value]) => [name, typeof value])),
  }),
)
