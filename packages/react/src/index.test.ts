import { readFileSync } from 'node:fs'
import { dirname, join, relative, resolve } from 'node:path'
import { expect, test } from 'vitest'

test('default: exports', async () => {
  expect(Object.keys(await import('./index.js')).sort()).toMatchInlineSnapshot(`
    [
      "ConnectButton",
      "LatchkeyProvider",
      "createTheme",
      "locales",
      "themes",
      "useAccount",
      "useAccountModal",
      "useAddAccount",
      "useAddPasskey",
      "useBalance",
      "useCallsStatus",
      "useCapabilities",
      "useChainId",
      "useClient",
      "useConnect",
      "useConnectModal",
      "useConnectors",
      "useDisconnect",
      "useEmailSignIn",
      "useExportWallet",
      "useGetCallsStatus",
      "useGuestSignIn",
      "useImportWallet",
      "useLinkAccount",
      "useOAuthSignIn",
      "usePasskeySignIn",
      "useRecentConnectorId",
      "useRecovery",
      "useSelectAccount",
      "useSendCalls",
      "useSendTransaction",
      "useSession",
      "useSignIn",
      "useSignMessage",
      "useSignTypedData",
      "useSwitchChain",
      "useUnlinkAccount",
      "useUpgradeAccount",
      "useUser",
      "useWaitForCallsStatus",
    ]
  `)
})

/** Files reachable from `entry` through static imports inside this package (dynamic import() excluded). */
function staticGraph(entry: string): string[] {
  const seen = new Set<string>()
  const visit = (file: string) => {
    if (seen.has(file)) return
    seen.add(file)
    const source = readFileSync(file, 'utf8')
    for (const [, specifier] of source.matchAll(/^\s*(?:import|export)\s[^;]*?from\s+'(\.[^']+)'/gms)) {
      const target = resolve(dirname(file), (specifier as string).replace(/\.js$/, ''))
      const candidates = [`${target}.ts`, `${target}.tsx`, target]
      const found = candidates.find((candidate) => {
        try {
          return readFileSync(candidate) && true
        } catch {
          return false
        }
      })
      if (found && /\.tsx?$/.test(found)) visit(found)
    }
  }
  visit(entry)
  return [...seen].map((file) => relative(import.meta.dirname, file)).sort()
}

test('behavior: the eager entry never statically reaches the modal code', () => {
  const graph = staticGraph(join(import.meta.dirname, 'index.ts'))
  expect(graph.filter((file) => file.startsWith('modal/'))).toEqual([])
  expect(graph).toContain('ModalHost.tsx')
  const host = readFileSync(join(import.meta.dirname, 'ModalHost.tsx'), 'utf8')
  expect(host).toContain("import('./modal/ConnectModal.js')")
  expect(host).toContain("import('./modal/AccountModal.js')")
})

test('behavior: the connect modal never statically reaches the account modal or the balance reader', () => {
  // The first click on Connect downloads the connect modal's graph; viem's RPC client comes with the account modal.
  const graph = staticGraph(join(import.meta.dirname, 'modal', 'ConnectModal.tsx'))
  expect(graph).toContain('modal/Dialog.tsx')
  expect(graph.filter((file) => file === 'modal/AccountModal.tsx' || file === 'hooks/useBalance.ts')).toEqual([])
})
