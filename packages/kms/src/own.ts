/**
 * The value `map` holds under `key` as its own property, or undefined: request input (operation
 * names, activity types, filter types) never reaches `Object.prototype` (`constructor`,
 * `toString`, `__proto__`).
 *
 * @example
 * own({ whoami: run }, 'constructor') // undefined
 */
export function own<value>(map: Readonly<Record<string, value>>, key: string): value | undefined {
  return Object.hasOwn(map, key) ? map[key] : undefined
}
