'use client'
import type { EmbeddedConnector, EmbeddedFlows } from '@latchkey/core'
import { type FormEvent, useEffect, useId, useRef, useState } from 'react'
import { useConnect } from '../hooks/useConnect.js'

/** Which embedded sign-in the user picked in the wallet list. */
export type EmbeddedMode = 'email' | 'passkey' | 'create-passkey' | 'recover'

type Props = { connector: EmbeddedConnector; mode: EmbeddedMode; onBack(): void; onConnected(): void }

/** Seconds before "Resend code" is offered again. */
export const RESEND_COOLDOWN_SECONDS = 30

type Problem = { shortMessage?: string; details?: string | undefined; message?: string; code?: unknown }

/** The error as people read it: the catalogue text, and the reason when the backend gave one. */
function describe(error: unknown): { text: string; reason: string | undefined } {
  const problem = (error ?? {}) as Problem
  const text = problem.shortMessage ?? problem.message ?? 'Something went wrong.'
  return { text, reason: problem.details && problem.details !== text && !problem.details.includes('\n') ? problem.details : undefined }
}

/**
 * Email code, passkey and email-recovery sign-in for the embedded wallet. Each step shows its
 * pending state; errors are announced (role "alert"); a code can be sent again after a cooldown.
 */
export default function EmbeddedView({ connector, mode, onBack, onConnected }: Props) {
  const connect = useConnect()
  const [step, setStep] = useState<'address' | 'code'>('address')
  const [email, setEmail] = useState('')
  const [code, setCode] = useState('')
  const [pending, setPending] = useState<string>()
  const [error, setError] = useState<unknown>()
  const [otpId, setOtpId] = useState<string>()
  const [cooldown, setCooldown] = useState(0)
  const recovery = useRef<Awaited<ReturnType<EmbeddedFlows['startRecovery']>>>(undefined)
  const frameHost = useRef<HTMLDivElement>(null)
  const emailId = useId()
  const codeId = useId()

  // The resend countdown (display only).
  useEffect(() => {
    if (cooldown <= 0) return
    const timer = setTimeout(() => setCooldown((seconds) => seconds - 1), 1000)
    return () => clearTimeout(timer)
  }, [cooldown])
  useEffect(() => () => recovery.current?.close(), [])

  async function run(label: string, work: () => Promise<void>) {
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

  const flows = () => connector.getFlows()
  const finish = async () => {
    await connect.connect({ connector })
    onConnected()
  }

  async function sendCode() {
    const { wallet } = await flows()
    if (mode === 'recover') {
      recovery.current?.close()
      recovery.current = await (await flows()).startRecovery(frameHost.current!, email)
    } else setOtpId((await wallet.startEmail(email)).otpId)
    setStep('code')
    setCode('')
    setCooldown(RESEND_COOLDOWN_SECONDS)
  }

  function onSubmitEmail(event: FormEvent) {
    event.preventDefault()
    if (mode === 'create-passkey') return void run('Waiting for your passkey…', async () => (await (await flows()).passkeys.signUp({ email }), await finish()))
    void run('Sending a code…', sendCode)
  }

  function onSubmitCode(event: FormEvent) {
    event.preventDefault()
    void run('Checking the code…', async () => {
      if (mode === 'recover') await recovery.current!.finish(code)
      else await (await flows()).wallet.verifyEmail({ otpId: otpId!, code })
      await finish()
    })
  }

  // "Continue with passkey" needs no form: the browser's passkey prompt is the whole step.
  const started = useRef(false)
  useEffect(() => {
    if (mode !== 'passkey' || started.current) return
    started.current = true
    void run('Waiting for your passkey…', async () => (await (await flows()).passkeys.signIn(), await finish()))
  })

  const problem = error ?? (connect.status === 'error' ? connect.error : undefined)
  const shown = problem ? describe(problem) : undefined
  const title = { email: 'Continue with email', passkey: 'Continue with passkey', 'create-passkey': 'Create a passkey', recover: 'Recover account' }[mode]

  return (
    <div className="lk-embedded">
      <p className="lk-pending-name">{title}</p>
      {mode === 'passkey' ? (
        !problem && (
          <p className="lk-muted" role="status">
            {pending ?? 'Signing in…'}
          </p>
        )
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
            {mode === 'recover' ? `We sent a recovery code to ${email}. Paste it here.` : `We sent a code to ${email}.`}
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
          <button type="button" className="lk-secondary" disabled={cooldown > 0 || pending !== undefined} onClick={() => void run('Sending a code…', sendCode)}>
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
        {mode === 'passkey' && problem !== undefined && (
          <button
            type="button"
            className="lk-primary"
            onClick={() => void run('Waiting for your passkey…', async () => (await (await flows()).passkeys.signIn(), await finish()))}
          >
            Try again
          </button>
        )}
      </div>
    </div>
  )
}
