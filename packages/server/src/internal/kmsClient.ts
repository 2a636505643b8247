import { createPrivateKey, ECDH, type KeyObject, sign } from 'node:crypto'
import { currentRequestId, traceHeaders } from '@latchkey/service'
import { TurnkeyClient, TurnkeyRequestError } from '@turnkey/http'

/** What signs the requests of a TurnkeyClient. */
type TStamper = ConstructorParameters<typeof TurnkeyClient>[1]

/**
 * The X-Stamp of an API key, as `@turnkey/api-key-stamper`'s ApiKeyStamper makes it (base64url
 * JSON `{publicKey, scheme, signature}`, a DER ECDSA P-256 signature over SHA-256 of the body),
 * with the key parsed once: that stamper imports its signing module and rebuilds the key from
 * its hex on every stamp, a few ms of each call the backend makes. The key is read on the first
 * stamp, so a bad one fails the call, as it did.
 *
 * @example
 * const kms = new KmsClient({ baseUrl: kmsUrl }, apiKeyStamper({ apiPublicKey, apiPrivateKey }))
 */
export function apiKeyStamper(keys: { apiPublicKey: string; apiPrivateKey: string }): TStamper {
  let key: KeyObject | undefined
  const keyObject = () => {
    if (key) return key
    let point: Buffer
    try {
      point = ECDH.convertKey(keys.apiPublicKey, 'prime256v1', 'hex', undefined, 'uncompressed') as Buffer
    } catch {
      throw new Error('unable to load API key: invalid public key (a compressed P-256 public key in hex)')
    }
    key = createPrivateKey({
      format: 'jwk',
      key: {
        kty: 'EC',
        crv: 'P-256',
        d: Buffer.from(keys.apiPrivateKey.padStart(64, '0'), 'hex').toString('base64url'),
        x: point.subarray(1, 33).toString('base64url'),
        y: point.subarray(33).toString('base64url'),
      },
    })
    return key
  }
  return {
    async stamp(content: string) {
      const signature = sign('sha256', Buffer.from(content), keyObject()).toString('hex')
      const stamp = { publicKey: keys.apiPublicKey, scheme: 'SIGNATURE_SCHEME_TK_API_P256', signature }
      return { stampHeaderName: 'X-Stamp', stampHeaderValue: Buffer.from(JSON.stringify(stamp)).toString('base64url') }
    },
  }
}

/**
 * The Turnkey client the backend calls the kms with, which also tells the kms which request it
 * serves: the request id (`x-request-id`, so one sign-in's log lines can be followed from the
 * backend into the kms) and, with traces on, the W3C `traceparent`. Answers and errors are the
 * stock client's.
 *
 * @example
 * const kms = new KmsClient({ baseUrl: kmsUrl }, apiKeyStamper({ apiPublicKey, apiPrivateKey }))
 */
export class KmsClient extends TurnkeyClient {
  override async request<body = unknown, response = unknown>(url: string, body: body): Promise<response> {
    const text = JSON.stringify(body)
    const stamp = await this.stamper.stamp(text)
    const requestId = currentRequestId()
    const response = await fetch(this.config.baseUrl + url, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        [stamp.stampHeaderName]: stamp.stampHeaderValue,
        ...(requestId ? { 'x-request-id': requestId } : {}),
        ...traceHeaders(),
      },
      body: text,
      redirect: 'error',
    })
    if (!response.ok) {
      let failure: ConstructorParameters<typeof TurnkeyRequestError>[0]
      try {
        failure = await response.json()
      } catch {
        throw new Error(`${response.status} ${response.statusText}`)
      }
      throw new TurnkeyRequestError(failure)
    }
    return (await response.json()) as response
  }
}
