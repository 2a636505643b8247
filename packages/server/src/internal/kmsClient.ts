import { currentRequestId, traceHeaders } from '@latchkey/service'
import { TurnkeyClient, TurnkeyRequestError } from '@turnkey/http'

/**
 * The Turnkey client the backend calls the kms with, which also tells the kms which request it
 * serves: the request id (`x-request-id`, so one sign-in's log lines can be followed from the
 * backend into the kms) and, with traces on, the W3C `traceparent`. Answers and errors are the
 * stock client's.
 *
 * @example
 * const kms = new KmsClient({ baseUrl: kmsUrl }, new ApiKeyStamper({ apiPublicKey, apiPrivateKey }))
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
