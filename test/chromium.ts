/**
 * How every test and benchmark starts Debian's Chromium (scripts/ensure-chromium.mjs installs it):
 * headless, and with no traffic beyond this machine — without the background-networking flags and
 * the resolver rule, Chromium keeps calling Google's hosts, which this network refuses.
 *
 * @example
 * const browser = await chromium.launch(chromiumLaunchOptions)
 */
export const chromiumLaunchOptions = {
  executablePath: '/usr/bin/chromium',
  headless: true,
  args: [
    '--no-sandbox',
    '--disable-gpu',
    '--disable-quic',
    '--no-first-run',
    '--disable-background-networking',
    '--disable-component-update',
    '--disable-sync',
    '--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1, EXCLUDE localhost',
  ],
}
