import { verifyTypedData } from 'viem'
import { privateKeyToAddress } from 'viem/accounts'
import { describe, expect, test } from 'vitest'
import { anvilKeys } from '../../../../test/chains.js'
import { setupClient } from '../../../../test/setup.js'
import { connect } from './connect.js'
import { signTypedData } from './signTypedData.js'

const key = anvilKeys[3]
const address = privateKeyToAddress(key)

const typedData = {
  domain: { name: 'Latchkey Demo', version: '1', chainId: 31337, verifyingContract: '0xCcCCccccCCCCcCCCCCCcCcCccCcCCCcCcccccccC' },
  types: {
    Person: [
      { name: 'name', type: 'string' },
      { name: 'wallet', type: 'address' },
    ],
    Mail: [
      { name: 'from', type: 'Person' },
      { name: 'to', type: 'Person' },
      { name: 'contents', type: 'string' },
    ],
  },
  primaryType: 'Mail',
  message: {
    from: { name: 'Cow', wallet: '0xCD2a3d9F938E13CD947Ec05AbC7FE734Df8DD826' },
    to: { name: 'Bob', wallet: '0xbBbBBBBbbBBBbbbBbbBbbbbBBbBbbbbBbBbbBBbB' },
    contents: 'Hello, Bob!',
  },
} as const

describe('signTypedData', () => {
  test('default: eth_signTypedData_v4, verifies against the connected address', async () => {
    const { client, prompts } = setupClient({ privateKey: key })
    await connect(client, { connector: 'dev' })
    const signature = await signTypedData(client, typedData)
    expect(await verifyTypedData({ ...typedData, address, signature })).toBe(true)
    expect(prompts.at(-1)).toMatchObject({ method: 'eth_signTypedData_v4', summary: 'Sign typed data: Mail' })
  })
})
