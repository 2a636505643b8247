import { IframeStamper } from '@turnkey/iframe-stamper'
import { ClientsNotFoundError, InvalidCodeError } from './errors.js'
import type { PasskeyFlows } from './passkeys.js'
import type { EmbeddedWallet, EmbeddedWalletCredential, RecoveryType } from './wallet.js'

/** The frame pages the key-management service serves on its own origin (SPEC §2). */
export type FrameKind = 'auth' | 'recovery' | 'export' | 'import'

let frames = 0

/**
 * Mounts one frame in `container` (a sandboxed iframe, `allow-scripts allow-same-origin`, from the
 * frames origin) and opens its message channel.
 */
async function mountFrame(wallet: EmbeddedWallet, kind: FrameKind, container: HTMLElement): Promise<IframeStamper> {
  const { framesUrl } = await wallet.settings()
  if (!framesUrl) throw new ClientsNotFoundError({ details: 'No frames url: set framesUrl, or have the backend publish one' })
  const stamper = new IframeStamper({
    iframeUrl: `${framesUrl.replace(/\/+$/, '')}/${kind}`,
    iframeContainer: container,
    iframeElementId: `latchkey-${kind}-frame-${++frames}`,
  })
  stamper.iframe.title = TITLES[kind]
  await stamper.init()
  return stamper
}

/**
 * A request of our frames' protocol that @turnkey/iframe-stamper has no method for, sent over the
 * stamper's own channel (its `createRequest`, private in its types), so the answer arrives where
 * its other answers do.
 */
function frameRequest(frame: IframeStamper, type: string, payload: Record<string, unknown> = {}): Promise<unknown> {
  return (frame as unknown as { createRequest(type: string, payload: Record<string, unknown>): Promise<unknown> }).createRequest(type, payload)
}

const TITLES: Record<FrameKind, string> = {
  auth: 'Wallet session',
  recovery: 'Account recovery',
  export: 'Your secret recovery phrase',
  import: 'Import a wallet',
}

/**
 * "Export wallet": the wallet's export bundle is encrypted to the export frame's key and opened
 * inside that frame, which shows the phrase. The page never holds it (the frame is cross-origin).
 *
 * @example
 * const exported = await exportWallet(wallet, document.getElementById('export')!)
 * // later: exported.close()
 */
export async function exportWallet(wallet: EmbeddedWallet, container: HTMLElement): Promise<{ close(): void }> {
  const frame = await mountFrame(wallet, 'export', container)
  try {
    const bundle = await wallet.exportBundle(frame.publicKey()!)
    await frame.injectWalletExportBundle(bundle, wallet.current!.organizationId)
  } catch (error) {
    frame.clear()
    throw error
  }
  return { close: () => frame.clear() }
}

/**
 * "Import wallet": the import frame takes the phrase the user types and encrypts it to the
 * service's import key; `complete` sends that ciphertext and answers the new wallet's address.
 *
 * @example
 * const importing = await importWallet(wallet, container)
 * const address = await importing.complete('Imported')
 */
export async function importWallet(
  wallet: EmbeddedWallet,
  container: HTMLElement,
): Promise<{ complete(walletName: string): Promise<`0x${string}`>; close(): void }> {
  const frame = await mountFrame(wallet, 'import', container)
  try {
    const bundle = await wallet.importBundle()
    await frame.injectImportBundle(bundle, wallet.current!.organizationId, wallet.current!.userId)
  } catch (error) {
    frame.clear()
    throw error
  }
  return {
    async complete(walletName) {
      const encrypted = await frame.extractWalletEncryptedBundle()
      const address = await wallet.importWallet(encrypted, walletName)
      frame.clear()
      return address
    },
    close: () => frame.clear(),
  }
}

/**
 * "Recover account": the email carries a credential encrypted to the recovery frame's key, and the
 * user pastes it into that frame, which `container` shows (never into the page: the frame refuses a
 * code the page sends). `finish` has the frame open what was typed; by email (`recoveryType:
 * 'email'`, an API key) the frame then signs in a new session key of the consent frame for 1800 s;
 * after a lost passkey (`'passkey'`, a recover-user key) it registers a new passkey with
 * `recover_user` and the user signs in with it (pass `passkeys`). The frame stamps nothing else.
 *
 * @example
 * const recovery = await startRecovery(wallet, container, 'ada@example.com')
 * // the user pastes the code into the frame, then clicks the page's "Verify":
 * await recovery.finish()
 */
export async function startRecovery(
  wallet: EmbeddedWallet,
  container: HTMLElement,
  email: string,
  options: { recoveryType?: RecoveryType | undefined; passkeys?: PasskeyFlows | undefined } = {},
): Promise<{ finish(): Promise<EmbeddedWalletCredential>; close(): void }> {
  const recoveryType = options.recoveryType ?? 'email'
  if (recoveryType === 'passkey' && !options.passkeys) throw new ClientsNotFoundError({ details: 'Passkey recovery needs the passkey flows' })
  const frame = await mountFrame(wallet, 'recovery', container)
  try {
    await wallet.startRecovery(email, frame.publicKey()!, recoveryType)
  } catch (error) {
    frame.clear()
    throw error
  }
  return {
    async finish() {
      try {
        await frameRequest(frame, 'OPEN_TYPED_CREDENTIAL')
      } catch (error) {
        throw new InvalidCodeError({ cause: error })
      }
      const credential = recoveryType === 'passkey' ? await options.passkeys!.recover(frame) : await wallet.finishRecovery(frame, { recoveryType })
      frame.clear()
      return credential
    },
    close: () => frame.clear(),
  }
}
