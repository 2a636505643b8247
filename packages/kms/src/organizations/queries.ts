import { p256 } from '@noble/curves/p256'
import { sha256 } from '@noble/hashes/sha2'
import { z } from 'zod'
import type { QueryContext, QueryTable } from '../activities/table.js'
import type { Caller } from '../context.js'
import { GrpcCode, invalid, KmsError } from '../errors.js'
import { own } from '../own.js'
import { page, pagination } from '../pagination.js'
import { parse } from '../params.js'
import { mapSeries } from '../sequence.js'
import { featureView, invitationView, policyView, privateKeyView, tagView, userView, walletView } from '../views.js'
import { rootUserIds } from './quorum.js'

// Organizations: who is asking, an organization and its settings, its sub-organizations, attestation.

/** What `get_attestation` says about an enclave this service stands in for. */
const ATTESTED_ENCLAVES: Record<string, string> = {
  signer: 'signs export and import bundles',
  notarizer: 'signs session JWTs',
}

/** The organizations queries. */
export function organizationQueries({ db, signerPrivateKey, oidc, now }: QueryContext): QueryTable {
  const organizationData = async (caller: Caller) => {
    const organization = (await db.organization(caller.organizationId))!
    return {
      organizationId: organization.id,
      name: organization.name,
      users: await mapSeries(await db.users(organization.id), async (row) => userView(db, row)),
      policies: (await db.policies(organization.id)).map(policyView),
      privateKeys: await mapSeries(await db.privateKeys(organization.id), async (row) => privateKeyView(db, row)),
      invitations: (await db.invitations(organization.id)).map(invitationView),
      tags: [...(await db.tags(organization.id, 'TAG_TYPE_USER')), ...(await db.tags(organization.id, 'TAG_TYPE_PRIVATE_KEY'))].map(tagView),
      rootQuorum: { threshold: organization.root_quorum_threshold, userIds: await rootUserIds(db, organization.id) },
      features: (await db.features(organization.id)).map(featureView),
      wallets: (await db.wallets(organization.id)).map(walletView),
      smartContractInterfaceReferences: [],
    }
  }

  return {
    async whoami(_, caller) {
      const organization = (await db.organization(caller.organizationId))!
      // A parent organization's key answers for its own user.
      const self = (await db.user(caller.userId, caller.homeOrganizationId))!
      return { organizationId: organization.id, organizationName: organization.name, userId: self.id, username: self.name }
    },
    async get_organization(_, caller) {
      return { organizationData: await organizationData(caller) }
    },
    async get_organization_configs(_, caller) {
      const { features, rootQuorum } = await organizationData(caller)
      return { configs: { features, quorum: rootQuorum } }
    },
    async get_attestation(body, caller) {
      const { enclaveType } = parse(z.object({ enclaveType: z.string().min(1) }), body)
      const role = own(ATTESTED_ENCLAVES, enclaveType)
      if (!role)
        throw new KmsError(
          GrpcCode.unimplemented,
          `no attestation for enclave type ${enclaveType}: this service runs no enclaves; it attests its signer key for ${Object.keys(ATTESTED_ENCLAVES).join(' and ')}`,
        )
      // Not an AWS Nitro attestation: a statement of the key that does the enclave's job here,
      // signed by that key (DER ECDSA P-256 over SHA-256 of the statement's bytes).
      const statement = JSON.stringify({
        format: 'latchkey-kms-attestation/v1',
        enclaveType,
        role,
        organizationId: caller.organizationId,
        publicKey: Buffer.from(p256.getPublicKey(signerPrivateKey, false)).toString('hex'),
      })
      const signature = p256.sign(sha256(new TextEncoder().encode(statement)), signerPrivateKey).toDERHex()
      return { attestationDocument: Buffer.from(JSON.stringify({ statement, signature })).toString('base64') }
    },
    async list_suborgs(body, caller) {
      const input = parse(
        z
          .object({ filterType: z.string().optional(), filterValue: z.string().optional(), paginationOptions: pagination })
          .refine((query) => !query.filterType || query.filterValue !== undefined, 'filterValue is required with filterType'),
        body,
      )
      const parent = caller.organizationId
      let ids: string[]
      if (!input.filterType) ids = (await db.subOrganizations(parent)).map((row) => row.id)
      else if (input.filterType === 'OIDC_TOKEN') {
        // As Turnkey does: the token must verify as oauth_login's does (signed by a trusted
        // issuer's keys, for an audience trusted for it, unexpired), without the nonce binding, as
        // nothing is signed in here. A forged token must not tell who holds an identity.
        const claims = await oidc.verify(input.filterValue!, now())
        const found = await mapSeries(claims.aud, (audience) => db.subOrganizationsByOauth(parent, claims.iss, audience, claims.sub))
        ids = [...new Set(found.flat().map((row) => row.id))]
      } else {
        const lookup = own(db.subOrganizationsBy, input.filterType)
        if (!lookup) throw invalid(`unsupported filterType ${input.filterType}: use ${[...Object.keys(db.subOrganizationsBy), 'OIDC_TOKEN'].join(', ')}`)
        ids = (await lookup(parent, input.filterValue!)).map((row) => row.id)
      }
      return { organizationIds: page(ids, (id) => id, input.paginationOptions) }
    },
  }
}
