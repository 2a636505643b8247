import { getFreePort } from '@latchkey/devnet'
import { afterAll, afterEach, beforeAll, expect, test, vi } from 'vitest'
import { createOidcVerifier } from '../src/auth/oidc.js'
import { startTestIssuer } from './oidcIssuer.js'

// An issuer's keys are fetched ahead (warm) and kept, so that no sign-in waits for them; after
// five minutes a token's check fetches them anew in the background, with the kept set used meanwhile.

const AUDIENCE = 'latchkey-client-id'
let issuer: Awaited<ReturnType<typeof startTestIssuer>>
beforeAll(async () => {
  issuer = await startTestIssuer()
})
afterAll(() => issuer.stop())
afterEach(() => vi.useRealTimers())

test('behavior: warm fetches the keys once; tokens use the kept set; a set older than five minutes is fetched anew in the background', async () => {
  const oidc = createOidcVerifier([{ issuer: issuer.issuer, audiences: [AUDIENCE] }])
  await oidc.warm()
  const fetched = issuer.keyFetches()
  expect({ keys: fetched, discoveries: issuer.discoveries() }).toEqual({ keys: 1, discoveries: 1 })
  const token = () => issuer.sign({ sub: 'ada' }, { audience: AUDIENCE, now: Date.now() })
  for (let n = 0; n < 3; n++) expect((await oidc.verify(await token(), Date.now())).sub).toBe('ada')
  expect(issuer.keyFetches()).toBe(fetched)

  vi.useFakeTimers({ toFake: ['Date'], now: Date.now() + 5 * 60_000 + 1 })
  // The token in hand is checked with the kept set; the fetch follows.
  expect((await oidc.verify(await token(), Date.now())).sub).toBe('ada')
  await vi.waitFor(() => expect(issuer.keyFetches()).toBe(fetched + 1))
  expect((await oidc.verify(await token(), Date.now())).sub).toBe('ada')
  expect({ keys: issuer.keyFetches(), discoveries: issuer.discoveries() }).toEqual({ keys: fetched + 1, discoveries: 1 })
})

test('error: warm with an issuer that cannot be reached resolves; the token then reports the issuer unavailable', async () => {
  const gone = `http://127.0.0.1:${await getFreePort()}/issuer`
  const oidc = createOidcVerifier([{ issuer: gone, audiences: [AUDIENCE] }])
  await expect(oidc.warm()).resolves.toBeUndefined()
  const token = await issuer.sign({ sub: 'ada', iss: gone }, { audience: AUDIENCE, now: Date.now() })
  await expect(oidc.verify(token, Date.now())).rejects.toThrow(`the keys of the OIDC issuer ${gone} could not be fetched`)
})
