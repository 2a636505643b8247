import { z } from 'zod'
import type { ActivityTable } from '../activities/table.js'
import type { ActivityContext } from '../context.js'
import { notFound } from '../errors.js'
import { digestOf, signDigest, signTransaction } from '../ethereum.js'
import { parse } from '../params.js'
import { heldPrivateKey, isPrivateKeyId, openedPrivateKey } from '../privateKeys/keys.js'
import { withAccountKey, withKeyOfAccount } from '../wallets/keys.js'

// Signing with a wallet account or a private key, named by `signWith`.

/** Runs `use` with the key `signWith` names: a private key, by id or address (privateKeys/keys.ts), or else a wallet account's. Zeroed after. */
async function withSigningKey<result>(context: ActivityContext, signWith: string, use: (privateKey: Uint8Array) => result | Promise<result>): Promise<result> {
  let held: Uint8Array | undefined
  if (isPrivateKeyId(signWith)) {
    held = await heldPrivateKey(context, signWith)
    if (!held) return await withAccountKey(context, signWith, use)
  } else {
    // An address: the private key holding it and the wallet account holding it, in one round trip
    // (or none, when this request's authorization read them).
    const read = context.signingKey
    const { privateKeyId, account } =
      read?.organizationId === context.caller.organizationId && read.address === signWith
        ? read
        : await context.db.signingKeyByAddress(context.caller.organizationId, signWith)
    if (privateKeyId !== undefined) held = await openedPrivateKey(context, privateKeyId)
    if (!held) {
      if (!account) throw notFound(`no wallet account with address ${signWith} in organization ${context.caller.organizationId}`)
      return await withKeyOfAccount(context, account, use)
    }
  }
  try {
    return await use(held)
  } finally {
    held.fill(0)
  }
}

const signRawPayload = z.object({ signWith: z.string().min(1), payload: z.string(), encoding: z.string(), hashFunction: z.string() })

export const SIGNING_ACTIVITIES: ActivityTable = {
  ACTIVITY_TYPE_SIGN_RAW_PAYLOAD_V2: {
    op: 'sign_raw_payload',
    // RFC 6979: the same payload signs the same way, so a resubmission's second run is harmless.
    readOnly: true,
    intentKey: 'signRawPayloadIntentV2',
    resultKey: 'signRawPayloadResult',
    async run(params, context) {
      const { signWith, payload, encoding, hashFunction } = parse(signRawPayload, params)
      return await withSigningKey(context, signWith, (privateKey) => signDigest(privateKey, digestOf(payload, encoding, hashFunction)))
    },
  },
  ACTIVITY_TYPE_SIGN_RAW_PAYLOADS: {
    op: 'sign_raw_payloads',
    readOnly: true,
    intentKey: 'signRawPayloadsIntent',
    resultKey: 'signRawPayloadsResult',
    async run(params, context) {
      const { signWith, payloads, encoding, hashFunction } = parse(
        z.object({ signWith: z.string().min(1), payloads: z.array(z.string()).min(1).max(100), encoding: z.string(), hashFunction: z.string() }),
        params,
      )
      return {
        signatures: await withSigningKey(context, signWith, (privateKey) =>
          payloads.map((payload) => signDigest(privateKey, digestOf(payload, encoding, hashFunction))),
        ),
      }
    },
  },
  ACTIVITY_TYPE_SIGN_TRANSACTION_V2: {
    op: 'sign_transaction',
    readOnly: true,
    intentKey: 'signTransactionIntentV2',
    resultKey: 'signTransactionResult',
    async run(params, context) {
      const { signWith, unsignedTransaction, type } = parse(
        z.object({ signWith: z.string().min(1), unsignedTransaction: z.string().min(1), type: z.literal('TRANSACTION_TYPE_ETHEREUM') }),
        params,
      )
      void type
      return { signedTransaction: await withSigningKey(context, signWith, (privateKey) => signTransaction(privateKey, unsignedTransaction)) }
    },
  },
}
