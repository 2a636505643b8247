'use client'
import { BaseError, type EmbeddedConnector, type RecoveryType } from '@latchkey/core'
import { type FormEvent, useEffect, useId, useRef, useState } from 'react'
import { useEmailSignIn } from '../hooks/useEmailSignIn.js'
import { usePasskeySignIn } from '../hooks/usePasskeySignIn.js'
import { useRecovery } from '../hooks/useRecovery.js'

/** Which embedded sign-in the user picked in the wallet list. */
export type EmbeddedMode = 'email' | 'passkey' | 'create-passkey' | 'recover'

type Props = { connector: EmbeddedConnector; mode: EmbeddedMode; onBack(): void; onConnected(): void }

/** Seconds before "Resend code" is offered again. */
export const RESEND_COOLDOWN_SECONDS = 30

/** The error as people read it: the catalogue text, and the reason when there is a one-line one. */
function describe(error: unknown): { text: string; reason: string | undefined } {
  if (!(error instanceof BaseError)) return { text: error instanceof Error ? error.message : 'Something went wrong.', reason: undefined }
  const reason = error.details && error.details !== error.shortMessage && !error.details.includes('\n') ? error.details : undefined
  return { text: error.shortMessage, reason }
}

/**
 * Email code, passkey and recovery sign-in for the embedded wallet, built on the same hooks an app
 * would use (useEmailSignIn, usePasskeySignIn, useRecovery). Each step shows its pending state;
 * errors are announced (role "alert"); a code can be sent again after a cooldown.
 */
export default function EmbeddedView({ mode, onBack, onConnected }: Props) {
  const emailSignIn = useEmailSignIn()
  const passkey = usePasskeySignIn()
  const recovery = useRecovery()
  const [step, setStep] = useState<'choose' | 'address' | 'code'>(mode === 'recover' ? 'choose' : 'address')
  const [recoveryType, setRecoveryType] = useState<RecoveryType>('email')
  const [email, setEmail] = useState('')
  const [code, setCode] = useState('')
  const [pending, setPending] = useState<string>()
  const [error, setError] = useState<unknown>()
  const [cooldown, setCooldown] = useState(0)
  const frameHost = useRef<HTMLDivElement>(null)
  const emailId = useId()
  const codeId = useId()

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
    setCode('')
    setCooldown(RESEND_COOLDOWN_SECONDS)
  }

  function onSubmitEmail(event: FormEvent) {
    event.preventDefault()
    if (mode === 'create-passkey') return void run('Waiting for your passkey…', async () => (await passkey.signUp({ email }), onConnected()))
    void run('Sending a code…', () => sendCode(false))
  }

  function onSubmitCode(event: FormEvent) {
    event.preventDefault()
    const label = mode === 'recover' && recoveryType === 'passkey' ? 'Waiting for your new passkey…' : 'Checking the code…'
    void run(label, async () => {
      if (mode === 'recover') await recovery.finish(code)
      else await emailSignIn.verify(code)
      onConnected()
    })
  }

  function choose(type: RecoveryType) {
    setRecoveryType(type)
    setStep('address')
  }

  // "Continue with passkey" needs no form: the browser's passkey prompt is the whole step.
  const started = useRef(false)
  useEffect(() => {
    if (mode !== 'passkey' || started.current) return
    started.current = true
    void run('Waiting for your passkey…', async () => (await passkey.signIn(), onConnected()))
  })

  const shown = error ? describe(error) : undefined
  const title = {
    email: 'Continue with email',
    passkey: 'Continue with passkey',
    'create-passkey': 'Create a passkey',
    recover: step === 'choose' ? 'Recover account' : recoveryType === 'passkey' ? 'I lost my passkey' : 'Recover with email',
  }[mode]

  return (
    <div className="lk-embedded">
      <p className="lk-pending-name">{title}</p>
      {mode === 'passkey' ? (
        !shown && (
          <p className="lk-muted" role="status">
            {pending ?? 'Signing in…'}
          </p>
        )
      ) : step === 'choose' ? (
        <div className="lk-form">
          <button type="button" className="lk-primary" onClick={() => choose('email')}>
            Recover with email
          </button>
          <p className="lk-muted lk-small-text">We email a code that signs you in for a while, to add a new passkey or export your wallet.</p>
          <button type="button" className="lk-secondary" onClick={() => choose('passkey')}>
            I lost my passkey
          </button>
          <p className="lk-muted lk-small-text">We email a code; then your browser creates a new passkey for this account.</p>
        </div>
      ) : step === 'address' ? (
        <form className="lk-form" onSubmit={onSubmitEmail}>
          <label htmlFor={emailId}>Email</label>
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
            {pending ?? 'Continue'}
          </button>
          {mode === 'recover' && <p className="lk-muted lk-small-text">We will email a recovery code to the address you signed up with.</p>}
        </form>
      ) : (
        <form className="lk-form" onSubmit={onSubmitCode}>
          <p className="lk-muted lk-small-text" role="status">
            {mode === 'recover'
              ? `We sent a recovery code to ${email}. Paste it here${recoveryType === 'passkey' ? '; then your browser asks for a new passkey' : ''}.`
              : `We sent a code to ${email}.`}
          </p>
          <label htmlFor={codeId}>Code</label>
          {mode === 'recover' ? (
            <textarea
              id={codeId}
              required
              rows={3}
              value={code}
              onChange={(event) => setCode(event.target.value)}
              disabled={pending !== undefined}
              spellCheck={false}
            />
          ) : (
            <input
              id={codeId}
              inputMode="numeric"
              autoComplete="one-time-code"
              required
              value={code}
              onChange={(event) => setCode(event.target.value)}
              disabled={pending !== undefined}
            />
          )}
          <button type="submit" className="lk-primary" disabled={pending !== undefined}>
            {pending ?? 'Verify'}
          </button>
          <button
            type="button"
            className="lk-secondary"
            disabled={cooldown > 0 || pending !== undefined}
            onClick={() => void run('Sending a code…', () => sendCode(true))}
          >
            {cooldown > 0 ? `Resend code in ${cooldown} s` : 'Resend code'}
          </button>
        </form>
      )}
      {/* The recovery frame: it holds the recovery credential; the page never does. */}
      <div ref={frameHost} className="lk-frame-host" hidden />
      {shown && (
        <div role="alert" className="lk-alert">
          <p className="lk-alert-text">{shown.text}</p>
          {shown.reason && <p className="lk-alert-reason">{shown.reason}</p>}
        </div>
      )}
      <div className="lk-row">
        <button type="button" className="lk-secondary" onClick={onBack} disabled={pending !== undefined && mode !== 'passkey'}>
          Back
        </button>
        {mode === 'passkey' && error !== undefined && (
          <button
            type="button"
            className="lk-primary"
            onClick={() => void run('Waiting for your passkey…', async () => (await passkey.signIn(), onConnected()))}
          >
            Try again
          </button>
        )}
      </div>
    </div>
  )
}
