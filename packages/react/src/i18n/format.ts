/**
 * `format('Open {name}', { name: 'Rainbow' })` → `Open Rainbow`; a missing parameter stays as written.
 * It comes with the modals: the button fills its one parameter itself.
 */
export function format(template: string, params?: Readonly<Record<string, string | number>>): string {
  return params ? template.replace(/\{(\w+)\}/g, (whole, name: string) => (name in params ? String(params[name]) : whole)) : template
}
