// The kms's tables as Kysely sees them, one row type each; storage/migrations.ts creates them.

export type OrganizationRow = { id: string; name: string; parent_id: string | null; root_quorum_threshold: number; created_at: number }
export type UserRow = { id: string; organization_id: string; name: string; email: string | null; created_at: number }
export type ApiKeyRow = {
  id: string
  user_id: string
  organization_id: string
  name: string
  public_key: string
  curve: string
  credential_type: string
  /** Unix ms; null: never. */
  expires_at: number | null
  created_at: number
  /**
   * Unix ms: when the user last proved themselves (an email code, a passkey) on the way to this
   * key, inherited unchanged by the keys it registers for them; null: never (policies/freshVerification.ts).
   */
  verified_at: number | null
  /**
   * A grant's key (grants/): the API key whose stamp created it, whose deletion deletes it (on
   * delete cascade). Null for every other key, and for grant keys from before migration 0011.
   */
  created_by_api_key_id: string | null
}
export type WalletRow = { id: string; organization_id: string; name: string; sealed_mnemonic: string; created_at: number; exported: number; imported: number }
export type WalletAccountRow = {
  id: string
  wallet_id: string
  organization_id: string
  curve: string
  path_format: string
  path: string
  address_format: string
  address: string
  public_key: string
  created_at: number
  /**
   * The account's private key, sealed under the master key with `accountKeyRecord(id)` as
   * associated data, so signing opens 32 bytes instead of deriving from the mnemonic. Null for
   * accounts stored before keys were kept: the first signing derives and seals it.
   */
  sealed_private_key: string | null
}
/** A passkey: its credential id and COSE public key (base64url), as registered. */
export type AuthenticatorRow = {
  id: string
  user_id: string
  organization_id: string
  name: string
  credential_id: string
  public_key: string
  counter: number
  /** JSON array of AUTHENTICATOR_TRANSPORT_* values. */
  transports: string
  aaguid: string
  attestation_type: string
  created_at: number
}
/** The key an import bundle is encrypted to, per user, sealed at rest. */
export type ImportTargetRow = { user_id: string; organization_id: string; sealed_private_key: string; created_at: number }
export type OtpRow = {
  id: string
  organization_id: string
  /** The user the code signs in; '' for a code to an address no user has yet (`contact`). */
  user_id: string
  code_hash: string
  expires_at: number
  /** Guesses compared so far (each reserved before its comparison: auth/activities.ts). */
  attempts: number
  /**
   * 0 while it may be redeemed, 1 once redeemed, 2 once a newer code for the same user replaced it,
   * 3 once the verification token verify_otp gave for it signed a user in (otp_login).
   */
  used: number
  created_at: number
  /** The sealed P-256 key the code of init_otp (V3) is encrypted to; null for init_otp_auth's codes. */
  sealed_target_key: string | null
  /**
   * The address a code of init_otp (V3) went to when no user of the organization has it (lowercase),
   * a sign-up's proof of its email; null for a user's code. Such a code signs nobody in.
   */
  contact: string | null
}
/** A rate limit's fixed window for one subject (`per-api-key:{key}`, `per-organization:{id}`). */
export type RateLimitRow = { subject: string; window_started_at: number; count: number }
export type MailRow = { id: string; to_address: string; subject: string; text: string; html: string; created_at: number }
export type ActivityRow = {
  id: string
  organization_id: string
  fingerprint: string
  type: string
  status: string
  intent: string
  result: string | null
  failure: string | null
  created_at: number
  updated_at: number
  /** Who submitted it, and from which organization: an activity waiting for consensus runs as them. */
  submitted_by: string | null
  submitted_from: string | null
  /**
   * JSON array of the policy engine's evaluations of this activity (get_policy_evaluations), one
   * per decision: `{id, voteId, policyEvaluations: [{policyId, outcome}], createdAt}` (ms). Null when
   * no policy was evaluated (a root user's activity).
   */
  policy_evaluations: string | null
}
export type VoteRow = {
  id: string
  activity_id: string
  user_id: string
  selection: string
  created_at: number
  /** The API key's public key or the passkey's credential id the vote was stamped with: the policies' `credentials`. */
  credential: string | null
  /** The stamped request the vote came in (the submission, or the approve/reject request), as text; null for votes stored before stamps were kept. */
  message: string | null
  /** The stamp's public key (an API key's compressed P-256 key, a passkey's COSE key). */
  public_key: string | null
  /** The stamp's signature: DER hex for an API key, the whole X-Stamp-Webauthn assertion for a passkey. */
  signature: string | null
  scheme: string | null
}
/** A user with the columns the key-management API added: phone number and last change. */
export type UserDetailsRow = UserRow & { phone_number: string | null; updated_at: number | null }
/** A secp256k1 key held on its own (not derived from a wallet), sealed with the master key under its id. */
export type PrivateKeyRow = {
  id: string
  organization_id: string
  name: string
  curve: string
  /** Compressed, hex without 0x. */
  public_key: string
  sealed_private_key: string
  created_at: number
  exported: number
  imported: number
}
export type PrivateKeyAddressRow = { private_key_id: string; organization_id: string; format: string; address: string }
export type TagType = 'TAG_TYPE_USER' | 'TAG_TYPE_PRIVATE_KEY'
export type TagRow = { id: string; organization_id: string; name: string; type: TagType; created_at: number; updated_at: number }
export type PolicyRow = {
  id: string
  organization_id: string
  name: string
  effect: string
  condition: string
  consensus: string
  notes: string
  time: string | null
  created_at: number
  updated_at: number
}
export type InvitationRow = {
  id: string
  organization_id: string
  receiver_user_name: string
  receiver_email: string
  /** JSON array of user tag ids. */
  receiver_user_tags: string
  access_type: string
  sender_user_id: string
  status: string
  created_at: number
  updated_at: number
}
/** An OIDC identity (issuer, audience, subject) that signs a user in through `oauth`. */
export type OauthProviderRow = {
  id: string
  user_id: string
  organization_id: string
  name: string
  issuer: string
  audience: string
  subject: string
  created_at: number
}
export type FeatureRow = { organization_id: string; name: string; value: string }
export type RootQuorumMemberRow = { organization_id: string; user_id: string }
export type TagMemberRow = { tag_id: string; member_id: string }
/**
 * A message waiting to go out (mail after commit): its recipient in clear, the rest sealed under
 * the master key (it may carry a credential bundle). `status`: pending, or failed for good.
 */
export type OutboxRow = {
  id: string
  activity_id: string | null
  to_address: string
  sealed_mail: string
  status: string
  attempts: number
  /** Unix ms: not before (a retry's backoff, or a claim's lease). */
  next_attempt_at: number
  last_error: string | null
  created_at: number
  /** Unix ms after which the message is no use (its credential expired): dropped, not sent. */
  expires_at: number
}

/**
 * An ERC-7715 grant (grants/): the rule the kms applies to every activity its API key stamps.
 * `rule`: JSON of the grant's permissions (grants/rule.ts).
 */
export type GrantRow = {
  id: string
  organization_id: string
  user_id: string
  api_key_id: string
  chain_id: number
  /** The account the grant lets its key sign for, as given. */
  account: string
  rule: string
  /** Unix ms; the key expires with it. */
  expires_at: number
  created_at: number
}
/** What a grant's key signed: one row per asset a signed transaction spends (`native`, or a token address in lowercase). */
export type GrantSpendRow = { grant_id: string; asset: string; amount: string; activity_id: string; signed_at: number }

/**
 * A user's second factor (mfa/): a TOTP secret (sealed, `sealed_secret`) or one of their passkeys
 * (`authenticator_id`). `status`: MFA_FACTOR_STATUS_PENDING until a TOTP's first code is
 * verified, then MFA_FACTOR_STATUS_ACTIVE. `failures`: wrong codes since the last right one;
 * `locked_until` (unix ms): refused until then. `last_time_step`: the TOTP step last accepted, so
 * a code is accepted once.
 */
export type MfaFactorRow = {
  id: string
  organization_id: string
  user_id: string
  type: string
  name: string
  status: string
  sealed_secret: string | null
  authenticator_id: string | null
  failures: number
  locked_until: number | null
  last_time_step: number | null
  created_at: number
}
/** A one-time recovery code, as the SHA-256 of its user id and text; `used_at` once spent. */
export type MfaRecoveryCodeRow = { code_hash: string; user_id: string; organization_id: string; used_at: number | null; created_at: number }
/** When the holder of an API key last verified a second factor (unix ms). */
export type MfaVerificationRow = { api_key_id: string; verified_at: number }

/** Every table, for Kysely. */
export type Tables = {
  organizations: OrganizationRow
  users: UserDetailsRow
  api_keys: ApiKeyRow
  wallets: WalletRow
  wallet_accounts: WalletAccountRow
  authenticators: AuthenticatorRow
  import_targets: ImportTargetRow
  mfa_factors: MfaFactorRow
  mfa_recovery_codes: MfaRecoveryCodeRow
  mfa_verifications: MfaVerificationRow
  otps: OtpRow
  rate_limits: RateLimitRow
  mailbox: MailRow
  activities: ActivityRow
  votes: VoteRow
  private_keys: PrivateKeyRow
  private_key_addresses: PrivateKeyAddressRow
  tags: TagRow
  tag_members: TagMemberRow
  policies: PolicyRow
  invitations: InvitationRow
  oauth_providers: OauthProviderRow
  organization_features: FeatureRow
  root_quorum_members: RootQuorumMemberRow
  outbox: OutboxRow
  grants: GrantRow
  grant_spends: GrantSpendRow
}
