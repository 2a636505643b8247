import { BATCH_EXECUTOR_ADDRESS, getFreePort } from '@latchkey/devnet'
import { describe, expect, test } from 'vitest'
import { createKms, type KmsOptions } from '../src/index.js'
import { startKms } from './harness.js'

// One setting names the batch executor for the kms's EIP-7702 rule and for the consent frame
// (eip7702Delegates, --eip7702-delegate); the frame's own executor setting is a deprecated alias
// that feeds both, and is refused when it names another contract.

const OTHER = '0x000000000000000000000000000000000000dEaD'
const parentOrigins = ['http://localhost:5173']

/** A kms serving frames, its consent page's executor, and whether a sub-organization may delegate to `address`. */
async function executorOf(options: KmsOptions, address: string) {
  const harness = await startKms({ frames: { port: await getFreePort(), parentOrigins }, ...options })
  try {
    const html = await (await fetch(`${harness.kms.framesUrl}/consent`)).text()
    const framesExecutor = /<meta name="latchkey-executor" content="([^"]*)">/.exec(html)![1]
    const sub = await harness.subOrganization()
    const delegation = await sub.client
      .signRawPayload({
        type: 'ACTIVITY_TYPE_SIGN_RAW_PAYLOAD_V2',
        timestampMs: harness.timestampMs(),
        organizationId: sub.organizationId,
        parameters: {
          signWith: sub.address,
          payload: JSON.stringify({ address, chainId: 31337, nonce: 0 }),
          encoding: 'PAYLOAD_ENCODING_EIP7702_AUTHORIZATION' as never,
          hashFunction: 'HASH_FUNCTION_NOT_APPLICABLE',
        },
      })
      .then(
        ({ activity }) => activity.status,
        (error: Error) => error.message,
      )
    return { framesExecutor, delegation }
  } finally {
    await harness.kms.stop()
  }
}

describe('the batch executor', () => {
  test('default: eip7702Delegates names the consent frame’s executor too', async () => {
    expect(await executorOf({ eip7702Delegates: [BATCH_EXECUTOR_ADDRESS] }, BATCH_EXECUTOR_ADDRESS)).toEqual({
      framesExecutor: BATCH_EXECUTOR_ADDRESS,
      delegation: 'ACTIVITY_STATUS_COMPLETED',
    })
  })

  test('behavior: the deprecated frames.executor alone feeds both: the frame signs for it, and the kms lets a sub-organization delegate to it', async () => {
    expect(await executorOf({ frames: { port: await getFreePort(), parentOrigins, executor: BATCH_EXECUTOR_ADDRESS } }, BATCH_EXECUTOR_ADDRESS)).toEqual({
      framesExecutor: BATCH_EXECUTOR_ADDRESS,
      delegation: 'ACTIVITY_STATUS_COMPLETED',
    })
  })

  test('behavior: the same address in both settings (any case) is accepted', async () => {
    const options = {
      eip7702Delegates: [BATCH_EXECUTOR_ADDRESS.toLowerCase()],
      frames: { port: await getFreePort(), parentOrigins, executor: BATCH_EXECUTOR_ADDRESS },
    }
    expect(await executorOf(options, BATCH_EXECUTOR_ADDRESS)).toEqual({
      framesExecutor: BATCH_EXECUTOR_ADDRESS.toLowerCase(),
      delegation: 'ACTIVITY_STATUS_COMPLETED',
    })
  })

  test('error: frames.executor and a different eip7702Delegates are refused before anything opens', () => {
    expect(() => createKms({ eip7702Delegates: [BATCH_EXECUTOR_ADDRESS], frames: { parentOrigins, executor: OTHER } })).toThrow(
      `frames.executor (deprecated) is ${OTHER} but eip7702Delegates is ${BATCH_EXECUTOR_ADDRESS}: they name one contract, the batch executor; give eip7702Delegates only`,
    )
    expect(() => createKms({ eip7702Delegates: [BATCH_EXECUTOR_ADDRESS, OTHER], frames: { parentOrigins, executor: OTHER } })).toThrow(
      `frames.executor (deprecated) is ${OTHER} but eip7702Delegates is ${BATCH_EXECUTOR_ADDRESS}, ${OTHER}: they name one contract, the batch executor; give eip7702Delegates only`,
    )
  })

  test('error: several delegates while the frames are served are refused; without frames they are kept', async () => {
    expect(() => createKms({ eip7702Delegates: [BATCH_EXECUTOR_ADDRESS, OTHER], frames: { parentOrigins } })).toThrow(
      'eip7702Delegates names 2 contracts, but the consent frame signs for one batch executor: name one while the frames are served',
    )
    const withoutFrames = await startKms({ eip7702Delegates: [BATCH_EXECUTOR_ADDRESS, OTHER] })
    await withoutFrames.kms.stop()
  })
})
