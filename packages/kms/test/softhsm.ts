import { createToken } from '../../../scripts/ensure-softhsm.mjs'
import { loadPkcs11Module } from '../src/keyring/pkcs11.js'

/**
 * A SoftHSM2 token (installed first when missing) with a sensitive, non-extractable AES-256 key
 * labelled `object`, made in the token: the `--kek` URI naming it, and SOFTHSM2_CONF for every
 * process using it (this one included: the module reads it once, when first initialized).
 */
export async function softHsmKek(options: { token?: string; object?: string; pin?: string } = {}) {
  const token = options.token ?? 'latchkey'
  const object = options.object ?? 'kek'
  const pin = options.pin ?? '1234'
  const made: { conf: string; pinFile: string; module: string; directory: string } = createToken({ label: token, pin })
  process.env.SOFTHSM2_CONF = made.conf
  const { binding, module, release } = await loadPkcs11Module(made.module)
  try {
    const slot = module.C_GetSlotList(true).find((candidate) => module.C_GetTokenInfo(candidate).label.trim() === token)!
    const session = module.C_OpenSession(slot, binding.CKF_SERIAL_SESSION | binding.CKF_RW_SESSION)
    module.C_Login(session, binding.CKU_USER, pin)
    module.C_GenerateKey(session, { mechanism: binding.CKM_AES_KEY_GEN }, [
      { type: binding.CKA_CLASS, value: binding.CKO_SECRET_KEY },
      { type: binding.CKA_KEY_TYPE, value: binding.CKK_AES },
      { type: binding.CKA_VALUE_LEN, value: 32 },
      { type: binding.CKA_LABEL, value: object },
      { type: binding.CKA_TOKEN, value: true },
      { type: binding.CKA_SENSITIVE, value: true },
      { type: binding.CKA_EXTRACTABLE, value: false },
      { type: binding.CKA_ENCRYPT, value: true },
      { type: binding.CKA_DECRYPT, value: true },
    ])
    module.C_Logout(session)
    module.C_CloseSession(session)
  } finally {
    release()
  }
  const uri = (pinFile = made.pinFile, tokenLabel = token) =>
    `pkcs11:token=${tokenLabel};object=${object}?module-path=${made.module}&pin-source=file:${pinFile}`
  return { ...made, uri, env: { SOFTHSM2_CONF: made.conf } }
}
