import { verifyMessage } from 'viem'
import { privateKeyToAddress } from 'viem/accounts'
import { describe, expect, test } from 'vitest'
import { anvilKeys } from '../../../../test/chains.js'
import { setupClient } from '../../../../test/setup.js'
import { NotConnectedError } from '../errors/connection.js'
import { UserRejectedRequestError } from '../errors/rpc.js'
import { connect } from './connect.js'
import { signMessage } from './signMessage.js'

const key = anvilKeys[2]
const address = privateKeyToAddress(key)

describe('signMessage', () => {
  test('default: personal_sign, recovers to the connected address', async () => {
    const { client, prompts } = setupClient({ privateKey: key })
    await connect(client, { connector: 'dev' })
    const signature = await signMessage(client, { message: 'Hello from Latchkey' })
    expect(await verifyMessage({ address, message: 'Hello from Latchkey', signature })).toBe(true)
    expect(prompts.at(-1)).toMatchObject({ method: 'personal_sign', summary: 'Hello from Latchkey' })
  })

  test('error: not connected', async () => {
    const { client } = setupClient({ privateKey: key })
    await expect(signMessage(client, { message: 'x' })).rejects.toThrow(NotConnectedError)
    await expect(signMessage(client, { message: 'x' })).rejects.toThrow('Please call connect() before request()')
  })

  test('error: rejected in the wallet: typed error, still connected', async () => {
    let allow = true
    const { client, logger } = setupClient({ privateKey: key, decide: async () => allow })
    await connect(client, { connector: 'dev' })
    allow = false
    await expect(signMessage(client, { message: 'no' })).rejects.toThrow(UserRejectedRequestError)
    expect(client.getState().status).toBe('connected')
    expect(logger.warnings).toEqual(['[latchkey] signMessage: User rejected the request.'])
  })
})
