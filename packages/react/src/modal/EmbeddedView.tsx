'use client'
import { BaseError, type EmbeddedConnector, openOAuthPopup, type RecoveryType } from '@latchkey/core'
import { type FormEvent, useEffect, useId, useRef, useState } from 'react'
import { useEmailSignIn } from '../hooks/useEmailSignIn.js'
import { useOAuthSignIn } from '../hooks/useOAuthSignIn.js'
import { usePasskeySignIn } from '../hooks/usePasskeySignIn.js'
import { useRecovery } from '../hooks/useRecovery.js'
import { type Translate, useMessages } from '../i18n/useMessages.js'
import { GuestView } from './GuestView.js'

/** Which embedded sign-in the user picked in the wallet list. */
export type EmbeddedMode = 'email' | 'passkey' | 'create-passkey' | 'recover' | 'google' | 'apple' | 'guest'

type Props = {
  connector: EmbeddedConnector
  mode: Exclude<EmbeddedMode, 'guest'>
  /** For 'google' and 'apple': the popup the click opened. */
  popup?: Window | null | undefined
  onBack(): void
  onConnected(): void
}

/** Seconds before "Resend code" is offered again. */
export const RESEND_COOLDOWN_SECONDS = 30

/** The error as people read it: the catalogue text in their language, and the reason when there is a one-line one. */
function describe(error: unknown, t: Translate): { text: string; reason: string | undefined } {
  if (!(error instanceof BaseError)) return { text: t.error(error), reason: undefined }
  const reason = error.details && error.details !== error.shortMessage && !error.details.includes('\n') ? error.details : undefined
  return { text: t.error(error), reason }
}

/**
 * Email code, passkey and recovery sign-in for the embedded wallet, built on the same hooks an app
 * would use (useEmailSignIn, usePasskeySignIn, useRecovery). Each step shows its pending state;
 * errors are announced (role "alert"); a code can be sent again after a cooldown.
 */
export default function EmbeddedView(props: Omit<Props, 'mode'> & { mode: EmbeddedMode }) {
  // "Continue as guest" rides in this chunk: a chunk of its own would split the hooks it shares with the page.
  return props.mode === 'guest' ? <GuestView {...props} /> : <SignInView {...props} mode={props.mode} />
}

function SignInView({ mode, popup, onBack, onConnected }: Props) {
  const t = useMessages()
  const emailSignIn = useEmailSignIn()
  const oauth = useOAuthSignIn()
  const prompted = mode === 'passkey' || mode === 'google' || mode === 'apple'
  const passkey = usePasskeySignIn()
  const recovery = useRecovery()
  const [step, setStep] = useState<'choose' | 'address' | 'code'>(mode === 'recover' ? 'choose' : 'address')
  const [recoveryType, setRecoveryType] = useState<RecoveryType>('email')
  const [email, setEmail] = useState('')
  const [pending, setPending] = useState<string>()
  const [error, setError] = useState<unknown>()
  const [cooldown, setCooldown] = useState(0)
  const frameHost = useRef<HTMLDivElement>(null)
  const emailId = useId()
  const codeFormId = useId()

  // The resend countdown (display only).
  useEffect(() => {
    if (cooldown <= 0) return
    const timer = setTimeout(() => setCooldown((seconds) => seconds - 1), 1000)
    return () => clearTimeout(timer)
  }, [cooldown])

  async function run(label: string, work: () => Promise<unknown>) {
    setPending(label)
    setError(undefined)
    try {
      await work()
    } catch (caught) {
      setError(caught)
    } finally {
      setPending(undefined)
    }
  }

  async function sendCode(again: boolean) {
    if (mode === 'recover') await recovery.start({ email, recoveryType, container: frameHost.current! })
    else if (again) await emailSignIn.resend()
    else await emailSignIn.start(email)
    setStep('code')
    setCooldown(RESEND_COOLDOWN_SECONDS)
  }

  // Email sign-in: the code is typed in the consent frame's dialog (kms frames origin), never here.
  async function codeInFrame() {
    setPending(t('waitingCode'))
    await emailSignIn.verify()
    onConnected()
  }

  function onSubmitEmail(event: FormEvent) {
    event.preventDefault()
    if (mode === 'create-passkey') return void run(t('waitingPasskey'), async () => (await passkey.signUp({ email }), onConnected()))
    void run(t('sendingCode'), async () => {
      await sendCode(false)
      if (mode !== 'recover') await codeInFrame()
    })
  }

  function resendCode() {
    void run(t('sendingCode'), async () => {
      await sendCode(true)
      if (mode !== 'recover') await codeInFrame()
    })
  }

  function onSubmitCode(event: FormEvent) {
    event.preventDefault()
    const label = t(mode === 'recover' && recoveryType === 'passkey' ? 'waitingNewPasskey' : 'checkingCode')
    void run(label, async () => {
      if (mode !== 'recover') return codeInFrame()
      await recovery.finish()
      onConnected()
    })
  }

  function choose(type: RecoveryType) {
    setRecoveryType(type)
    setStep('address')
  }

  // Passkey and social sign-in need no form: the browser's prompt, or the provider's window, is the whole step.
  const signInByPrompt = (popupWindow: Window | null | undefined) =>
    mode === 'passkey'
      ? run(t('waitingPasskey'), async () => (await passkey.signIn(), onConnected()))
      : run(
          t('waitingFor', { provider: mode === 'google' ? 'Google' : 'Apple' }),
          async () => (await oauth.signIn(mode as 'google' | 'apple', popupWindow ?? null), onConnected()),
        )
  const started = useRef(false)
  useEffect(() => {
    if (!prompted || started.current) return
    started.current = true
    void signInByPrompt(popup)
  })

  const shown = error ? describe(error, t) : undefined
  const title = t(
    (
      {
        email: 'continueEmail',
        passkey: 'continuePasskey',
        'create-passkey': 'createPasskey',
        google: 'continueGoogle',
        apple: 'continueApple',
        recover: step === 'choose' ? 'recoverAccount' : recoveryType === 'passkey' ? 'lostPasskey' : 'recoverEmail',
      } as const
    )[mode],
  )

  return (
    <div className="lk-embedded">
      <p className="lk-pending-name">{title}</p>
      {prompted ? (
        !shown && (
          <p className="lk-muted" role="status">
            {pending ?? t('signingIn')}
          </p>
        )
      ) : step === 'choose' ? (
        <div className="lk-form">
          <button type="button" className="lk-primary" onClick={() => choose('email')}>
            {t('recoverEmail')}
          </button>
          <p className="lk-muted lk-small-text">{t('recoverEmailHint')}</p>
          <button type="button" className="lk-secondary" onClick={() => choose('passkey')}>
            {t('lostPasskey')}
          </button>
          <p className="lk-muted lk-small-text">{t('lostPasskeyHint')}</p>
        </div>
      ) : step === 'address' ? (
        <form className="lk-form" onSubmit={onSubmitEmail}>
          <label htmlFor={emailId}>{t('email')}</label>
          <input
            id={emailId}
            type="email"
            autoComplete="email"
            required
            value={email}
            onChange={(event) => setEmail(event.target.value)}
            disabled={pending !== undefined}
          />
          <button type="submit" className="lk-primary" disabled={pending !== undefined}>
            {pending ?? t('continue')}
          </button>
          {mode === 'recover' && <p className="lk-muted lk-small-text">{t('recoverHint')}</p>}
        </form>
      ) : (
        <form id={codeFormId} className="lk-form" onSubmit={onSubmitCode}>
          <p className="lk-muted lk-small-text" role="status">
            {t(mode !== 'recover' ? 'sentCode' : recoveryType === 'passkey' ? 'sentRecoveryPasskey' : 'sentRecovery', { email })}
          </p>
          {mode !== 'recover' && <p className="lk-muted lk-small-text">{t('codeInFrame')}</p>}
        </form>
      )}
      {/* The recovery frame: the user pastes the code into it; it keeps the credential, the page never sees either. */}
      <div ref={frameHost} className="lk-frame-host" hidden={!(mode === 'recover' && step === 'code')} />
      {!prompted && step === 'code' && (
        // The form's buttons come after the recovery frame, so the box to paste into sits between the text and "Verify".
        <div className="lk-form">
          <button type="submit" form={codeFormId} className="lk-primary" disabled={pending !== undefined}>
            {pending ?? t(mode === 'recover' ? 'verify' : 'enterCode')}
          </button>
          <button type="button" className="lk-secondary" disabled={cooldown > 0 || pending !== undefined} onClick={resendCode}>
            {cooldown > 0 ? t('resendIn', { seconds: cooldown }) : t('resend')}
          </button>
        </div>
      )}
      {shown && (
        <div role="alert" className="lk-alert">
          <p className="lk-alert-text">{shown.text}</p>
          {shown.reason && <p className="lk-alert-reason">{shown.reason}</p>}
        </div>
      )}
      <div className="lk-row">
        <button type="button" className="lk-secondary" onClick={onBack} disabled={pending !== undefined && !prompted}>
          {t('back')}
        </button>
        {prompted && error !== undefined && (
          <button type="button" className="lk-primary" onClick={() => void signInByPrompt(mode === 'passkey' ? undefined : openOAuthPopup())}>
            {t('tryAgain')}
          </button>
        )}
      </div>
    </div>
  )
}
