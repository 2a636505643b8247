'use client'
import {
  type Connector,
  type EmbeddedConnector,
  enrollTotp,
  getLinkableProviders,
  type LinkAccountParameters,
  type LinkedLogin,
  MfaRequiredError,
  openOAuthPopup,
  UserRejectedRequestError,
  verifyMfa,
} from '@latchkey/core'
import { type FormEvent, useId, useState } from 'react'
import { useAction } from '../hooks/useAction.js'
import { useClient } from '../hooks/useClient.js'
import { useConnectors } from '../hooks/useConnectors.js'
import { useLinkAccount, useUnlinkAccount, useUser } from '../hooks/useLinking.js'
import { useRead } from '../hooks/useRead.js'
import { type Translate, useMessages } from '../i18n/useMessages.js'
import { formatDate } from './AccountModal.js'
import type { LinkingKey } from './signInMethods/en.js'
import { type LinkingTranslate, useLinkingMessages } from './signInMethods/messages.js'

type Props = { connector: EmbeddedConnector }

/** What is being done: shown as the status line, and what "Try again" repeats after a failure. */
type Work = { label: string; run(): Promise<unknown>; done(result: unknown): string }

/**
 * "Sign-in methods" in the account modal, on the hooks an app would use: each linked login (its
 * kind, label and when it was linked) with Remove (disabled, with why, for the last one); Add an
 * email (the code is typed in the consent frame), a passkey, each social sign-in the backend
 * offers, an external wallet (by a SIWE signature); and the second factor, set up in the consent
 * frame. A failure shows its text and "Try again".
 */
export default function SignInMethods({ connector }: Props) {
  const common = useMessages()
  const section = useLinkingMessages(common.locale)
  // Until the section's texts are here, a placeholder the size of its heading.
  if (!section) return <span className="lk-skeleton lk-skeleton-block" aria-hidden="true" />
  return <Methods connector={connector} common={common} t={section} />
}

function Methods({ connector, common, t }: Props & { common: Translate; t: LinkingTranslate }) {
  const client = useClient()
  const user = useUser()
  const linker = useLinkAccount()
  const unlinker = useUnlinkAccount()
  const [enroll] = useAction(() => enrollTotp(client, { connector }))
  const providers = useRead([client, connector], true, () => getLinkableProviders(client, { connector }))
  const wallets = useConnectors().filter((candidate) => candidate.type !== 'embedded' && candidate.type !== 'walletConnect')
  const [pending, setPending] = useState<string>()
  const [status, setStatus] = useState<string>()
  const [failed, setFailed] = useState<{ error: unknown; work: Work; factorId?: string | undefined }>()
  const [emailOpen, setEmailOpen] = useState(false)
  const [email, setEmail] = useState('')
  const headingId = useId()
  const lastId = useId()
  const emailId = useId()
  const addId = useId()

  async function run(work: Work) {
    setPending(work.label)
    setFailed(undefined)
    setStatus(undefined)
    try {
      const result = await work.run()
      setStatus(work.done(result))
      user.refetch()
    } catch (error) {
      setFailed({ error, work, factorId: error instanceof MfaRequiredError && error.reason === 'MFA_REQUIRED' ? factorToVerify() : undefined })
    } finally {
      setPending(undefined)
    }
  }

  /** The factor the kms asks for: the first enrolled one that is not locked (else the first). */
  function factorToVerify(): string | undefined {
    const factors = user.data?.mfa.enrolled ?? []
    return (factors.find((factor) => !factor.lockedUntil || Date.parse(factor.lockedUntil) <= Date.now()) ?? factors[0])?.factorId
  }

  /**
   * "Verify": the second factor in the consent frame, then the refused action once more. Cancelled
   * there (or refused): the failure stays as it was, and nothing changed.
   */
  async function verifyAndRetry(factorId: string, work: Work) {
    setPending(t('verifyingMfa'))
    try {
      await verifyMfa(client, { connector, factorId })
    } catch (error) {
      setPending(undefined)
      // A cancel leaves the refusal (and its Verify) in place; another failure is shown instead.
      if (!(error instanceof UserRejectedRequestError)) setFailed({ error, work })
      return
    }
    await run(work)
  }

  function link(parameters: LinkAccountParameters, label: string) {
    void run({
      label,
      run: () => linker.linkAccount({ ...parameters, connector }),
      done: (login) => t('methodLinked', { label: (login as LinkedLogin).label }),
    })
  }

  function submitEmail(event: FormEvent) {
    event.preventDefault()
    const address = email.trim()
    if (!address) return
    setEmailOpen(false)
    setEmail('')
    link({ kind: 'email', email: address }, t('typeCodeInFrame', { email: address }))
  }

  const logins = user.data?.logins ?? []
  const enrolled = (user.data?.mfa.enrolled.length ?? 0) > 0
  const busy = pending !== undefined
  return (
    <section className="lk-tools" aria-labelledby={headingId}>
      <h3 className="lk-subheading" id={headingId}>
        {t('signInMethods')}
      </h3>
      {user.status === 'pending' && !user.data && (
        <>
          <span className="lk-skeleton lk-skeleton-line" aria-hidden="true" />
          <span className="lk-sr-only">{t('loadingMethods')}</span>
        </>
      )}
      {user.status === 'error' && (
        <div role="alert" className="lk-alert">
          <p className="lk-alert-text">{common.error(user.error)}</p>
          <button type="button" className="lk-text-button" onClick={user.refetch}>
            {common('tryAgain')}
          </button>
        </div>
      )}
      {/* A guest: the wallet is lost with this browser's data or its key's day, unless a login is added here. */}
      {user.data?.guest && <p className="lk-alert">{t('guestWarning')}</p>}
      {/* The app backend has no session for them (signed out there, or ended with an account change). */}
      {user.data === null && <p className="lk-muted lk-small-text">{t('signInToManage')}</p>}
      {logins.length > 0 && (
        <ul className="lk-logins" aria-labelledby={headingId}>
          {logins.map((login) => (
            <li key={login.id} className="lk-login">
              <KindIcon kind={login.kind} />
              <span className="lk-login-text">
                <span className="lk-login-label">
                  <span className="lk-sr-only">{`${t(kindKey(login.kind))}: `}</span>
                  {login.label}
                </span>
                <span className="lk-muted lk-small-text">{t('linkedOn', { date: formatDate(login.linkedAt, common.locale) })}</span>
              </span>
              <button
                type="button"
                className="lk-secondary"
                aria-label={t('removeMethod', { label: login.label })}
                aria-describedby={logins.length === 1 ? lastId : undefined}
                disabled={busy || logins.length === 1}
                onClick={() =>
                  void run({
                    label: t('removing'),
                    run: () => unlinker.unlinkAccount({ id: login.id, connector }),
                    done: () => t('methodRemoved', { label: login.label }),
                  })
                }
              >
                {t('remove')}
              </button>
            </li>
          ))}
        </ul>
      )}
      {logins.length === 1 && (
        <p className="lk-muted lk-small-text" id={lastId}>
          {t('onlyMethod')}
        </p>
      )}
      {user.data && (
        <>
          <h4 className="lk-subheading" id={addId}>
            {t('addMethod')}
          </h4>
          {/* biome-ignore lint/a11y/useSemanticElements: a group of buttons, not a form's fieldset */}
          <div className="lk-row lk-wrap" role="group" aria-labelledby={addId}>
            <button type="button" className="lk-secondary" disabled={busy} aria-expanded={emailOpen} onClick={() => setEmailOpen(!emailOpen)}>
              {t('kindEmail')}
            </button>
            <button type="button" className="lk-secondary" disabled={busy} onClick={() => link({ kind: 'passkey' }, common('waitingPasskey'))}>
              {t('kindPasskey')}
            </button>
            {(providers.data ?? []).map((provider) => (
              <button
                type="button"
                key={provider.name}
                className="lk-secondary"
                disabled={busy}
                // The popup opens in the click: blockers allow no other.
                onClick={() => link({ kind: 'oauth', provider: provider.name, popup: openOAuthPopup() }, t('linking'))}
              >
                {provider.displayName}
              </button>
            ))}
            {wallets.map((wallet: Connector) => (
              <button
                type="button"
                key={wallet.id}
                className="lk-secondary"
                disabled={busy}
                onClick={() => link({ kind: 'wallet', wallet }, t('signInWalletToLink', { name: wallet.name }))}
              >
                {wallet.name}
              </button>
            ))}
          </div>
          {emailOpen && (
            <form className="lk-form" onSubmit={submitEmail}>
              <label htmlFor={emailId}>{t('emailToLink')}</label>
              <input id={emailId} type="email" autoComplete="email" required value={email} onChange={(event) => setEmail(event.target.value)} />
              <button type="submit" className="lk-primary" disabled={busy || !email.trim()}>
                {t('sendCode')}
              </button>
            </form>
          )}
          <h4 className="lk-subheading">{t('secondFactor')}</h4>
          <p className="lk-small-text" role="status" aria-label={t('secondFactor')}>
            {t(enrolled ? 'mfaOn' : 'mfaOff')}
          </p>
          <button
            type="button"
            className="lk-secondary"
            disabled={busy}
            onClick={() => void run({ label: t('settingUpTotp'), run: enroll, done: () => t('totpEnrolled') })}
          >
            {t('setUpTotp')}
          </button>
        </>
      )}
      {pending && (
        <p className="lk-muted" role="status">
          {pending}
        </p>
      )}
      {status && !pending && (
        <p className="lk-muted" role="status" aria-label={t('methodsStatus')}>
          {status}
        </p>
      )}
      {failed?.factorId ? (
        <div role="alert" className="lk-alert">
          <p className="lk-alert-text">{t('mfaNeeded')}</p>
          <button type="button" className="lk-text-button" disabled={busy} onClick={() => void verifyAndRetry(failed.factorId!, failed.work)}>
            {t('verifyMfa')}
          </button>
        </div>
      ) : (
        failed && <Failure t={common} failed={failed} onRetry={() => void run(failed.work)} />
      )}
    </section>
  )
}

function Failure({ t, failed, onRetry }: { t: Translate; failed: { error: unknown }; onRetry(): void }) {
  const details = (failed.error as { details?: unknown }).details
  return (
    <div role="alert" className="lk-alert">
      <p className="lk-alert-text">{t.error(failed.error)}</p>
      {typeof details === 'string' && t.locale === 'en' && <p className="lk-alert-reason">{details}</p>}
      <button type="button" className="lk-text-button" onClick={onRetry}>
        {t('tryAgain')}
      </button>
    </div>
  )
}

const kindKey = (kind: string): LinkingKey =>
  kind === 'email' ? 'kindEmail' : kind === 'passkey' ? 'kindPasskey' : kind === 'wallet' ? 'kindWallet' : 'kindOAuth'

/** A small glyph for the login's kind (decorative: the kind is read out beside the label). */
function KindIcon({ kind }: { kind: string }) {
  const path =
    kind === 'email'
      ? 'M3 6h18v12H3z M3 6l9 7 9-7'
      : kind === 'passkey'
        ? 'M8 14a4 4 0 1 1 3.5-6H21v3h-2v2h-3v-2h-4.5A4 4 0 0 1 8 14z'
        : kind === 'wallet'
          ? 'M3 7h16v12H3z M15 12h6v4h-6z M5 7l10-4v4'
          : 'M12 3a9 9 0 1 0 0 18 9 9 0 0 0 0-18z M3 12h18 M12 3c3 3 3 15 0 18 M12 3c-3 3-3 15 0 18'
  return (
    <svg className="lk-login-icon" viewBox="0 0 24 24" width="20" height="20" aria-hidden="true" focusable="false">
      <path d={path} fill="none" stroke="currentColor" strokeWidth="1.6" strokeLinejoin="round" />
    </svg>
  )
}
