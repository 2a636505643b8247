import type { Db } from './db.js'
import type {
  ApiKeyRow,
  AuthenticatorRow,
  FeatureRow,
  InvitationRow,
  OauthProviderRow,
  PolicyRow,
  PrivateKeyRow,
  TagRow,
  UserRow,
  WalletAccountRow,
  WalletRow,
} from './storage/tables.js'

// Rows as the clients read them: the `v1*` shapes of @turnkey/http's public_api.types.d.ts.

/** Proto int64 timestamps travel as strings. */
export const timestamp = (ms: number) => ({ seconds: String(Math.floor(ms / 1000)), nanos: String((ms % 1000) * 1_000_000) })

/**
 * A user with their passkeys, API keys, tags and OAuth providers (`v1User`).
 *
 * @example
 * return { user: await userView(db, (await db.user(userId, organizationId))!) }
 */
export async function userView(db: Db, row: UserRow) {
  const details = await db.userDetails(row.id, row.organization_id)
  return {
    userId: row.id,
    userName: row.name,
    ...(row.email ? { userEmail: row.email } : {}),
    ...(details?.phone_number ? { userPhoneNumber: details.phone_number } : {}),
    authenticators: (await db.authenticatorsOfUser(row.id)).map(authenticatorView),
    apiKeys: (await db.apiKeysOfUser(row.id)).map(apiKeyView),
    userTags: await db.tagsOf(row.id),
    oauthProviders: (await db.oauthProvidersOfUser(row.id)).map(oauthProviderView),
    createdAt: timestamp(row.created_at),
    updatedAt: timestamp(details?.updated_at ?? row.created_at),
    mfaPolicies: [],
  }
}

export function apiKeyView(key: Pick<ApiKeyRow, 'id' | 'name' | 'public_key' | 'credential_type' | 'expires_at' | 'created_at'>) {
  return {
    credential: { publicKey: key.public_key, type: key.credential_type },
    apiKeyId: key.id,
    apiKeyName: key.name,
    createdAt: timestamp(key.created_at),
    updatedAt: timestamp(key.created_at),
    ...(key.expires_at !== null ? { expirationSeconds: String(Math.round((key.expires_at - key.created_at) / 1000)) } : {}),
  }
}

export function authenticatorView(row: AuthenticatorRow) {
  return {
    transports: JSON.parse(row.transports) as string[],
    attestationType: row.attestation_type,
    aaguid: row.aaguid,
    credentialId: row.credential_id,
    model: '',
    credential: { publicKey: row.public_key, type: 'CREDENTIAL_TYPE_WEBAUTHN_AUTHENTICATOR' },
    authenticatorId: row.id,
    authenticatorName: row.name,
    createdAt: timestamp(row.created_at),
    updatedAt: timestamp(row.created_at),
  }
}

export function walletView(wallet: Pick<WalletRow, 'id' | 'name' | 'created_at' | 'exported' | 'imported'>) {
  return {
    walletId: wallet.id,
    walletName: wallet.name,
    createdAt: timestamp(wallet.created_at),
    updatedAt: timestamp(wallet.created_at),
    exported: wallet.exported === 1,
    imported: wallet.imported === 1,
  }
}

export function walletAccountView(account: WalletAccountRow) {
  return {
    walletAccountId: account.id,
    organizationId: account.organization_id,
    walletId: account.wallet_id,
    curve: account.curve,
    pathFormat: account.path_format,
    path: account.path,
    addressFormat: account.address_format,
    address: account.address,
    publicKey: account.public_key,
    createdAt: timestamp(account.created_at),
    updatedAt: timestamp(account.created_at),
  }
}

export async function privateKeyView(db: Db, row: PrivateKeyRow) {
  return {
    privateKeyId: row.id,
    publicKey: row.public_key,
    privateKeyName: row.name,
    curve: row.curve,
    addresses: (await db.privateKeyAddresses(row.id)).map((address) => ({ format: address.format, address: address.address })),
    privateKeyTags: await db.tagsOf(row.id),
    createdAt: timestamp(row.created_at),
    updatedAt: timestamp(row.created_at),
    exported: row.exported === 1,
    imported: row.imported === 1,
  }
}

export function tagView(row: TagRow) {
  return { tagId: row.id, tagName: row.name, tagType: row.type, createdAt: timestamp(row.created_at), updatedAt: timestamp(row.updated_at) }
}

export function policyView(row: PolicyRow) {
  return {
    policyId: row.id,
    policyName: row.name,
    effect: row.effect,
    createdAt: timestamp(row.created_at),
    updatedAt: timestamp(row.updated_at),
    notes: row.notes,
    consensus: row.consensus,
    condition: row.condition,
    ...(row.time !== null ? { time: row.time } : {}),
  }
}

export function invitationView(row: InvitationRow) {
  return {
    invitationId: row.id,
    receiverUserName: row.receiver_user_name,
    receiverEmail: row.receiver_email,
    receiverUserTags: JSON.parse(row.receiver_user_tags) as string[],
    accessType: row.access_type,
    status: row.status,
    createdAt: timestamp(row.created_at),
    updatedAt: timestamp(row.updated_at),
    senderUserId: row.sender_user_id,
  }
}

export function oauthProviderView(row: OauthProviderRow) {
  return {
    providerId: row.id,
    providerName: row.name,
    issuer: row.issuer,
    audience: row.audience,
    subject: row.subject,
    createdAt: timestamp(row.created_at),
    updatedAt: timestamp(row.created_at),
  }
}

export const featureView = (row: FeatureRow) => ({ name: row.name, value: row.value })
