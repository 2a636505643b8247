'use client'
import { type EmbeddedConnector, signInAsGuest } from '@latchkey/core'
import { useAction } from '../hooks/useAction.js'
import { useClient } from '../hooks/useClient.js'
import { useMessages } from '../i18n/useMessages.js'
import { useLinkingMessages } from './signInMethods/messages.js'

type Props = { connector: EmbeddedConnector; onBack(): void; onConnected(): void }

/**
 * "Continue as guest": the warning first (a guest wallet lives in this browser, for a day, unless
 * a login is added), then the wallet is created only by the user's click on "Create a guest
 * wallet" (each guest is an account at the key-management service). Its texts are Sign-in
 * methods' (their lazy catalogue), where the account modal shows the same warning. Shown by
 * EmbeddedView (mode 'guest'), in its chunk.
 */
export function GuestView({ connector, onBack, onConnected }: Props) {
  const common = useMessages()
  const t = useLinkingMessages(common.locale)
  const client = useClient()
  const [signIn, guest] = useAction(() => signInAsGuest(client, { connector }))
  if (!t) return <span className="lk-skeleton lk-skeleton-block" aria-hidden="true" />
  const pending = guest.status === 'pending'
  return (
    <div className="lk-embedded">
      <p className="lk-pending-name">{common('continueGuest')}</p>
      <p className="lk-alert">{t('guestWarning')}</p>
      <button
        type="button"
        className="lk-primary"
        disabled={pending}
        onClick={() =>
          void signIn().then(onConnected, () => {
            // Shown below from the hook's error.
          })
        }
      >
        {pending ? t('creatingGuest') : t('createGuestWallet')}
      </button>
      {pending && (
        <p className="lk-sr-only" role="status">
          {t('creatingGuest')}
        </p>
      )}
      {guest.status === 'error' && (
        <div role="alert" className="lk-alert">
          <p className="lk-alert-text">{common.error(guest.error)}</p>
        </div>
      )}
      <div className="lk-row">
        <button type="button" className="lk-secondary" onClick={onBack} disabled={pending}>
          {common('back')}
        </button>
      </div>
    </div>
  )
}
