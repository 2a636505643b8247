/** Where the demo's small transfer goes, and the "to" of its typed data: anvil's last test account. */
export const RECIPIENT = '0xa0Ee7A142d267C1f36714E4a8F75612F20a79720'

/** Where "Send batch" sends 0.001 ETH each: anvil's test accounts #7 and #8, apart from RECIPIENT. */
export const BATCH_RECIPIENTS = ['0x14dC79964da2C08b23698B3D3cc7Ca32193d9955', '0x23618e81E3f5cdF7f54C3d65f7FBc0aBf5B21E8f'] as const

/** The EIP-712 "Mail" the demo asks the wallet to sign (the EIP's own example shape). */
export function mailTypedData({ from, chainId, contents }: { from: `0x${string}`; chainId: number; contents: string }) {
  return {
    domain: { name: 'Latchkey Demo', version: '1', chainId },
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
    message: { from: { name: 'You', wallet: from }, to: { name: 'Latchkey', wallet: RECIPIENT }, contents },
  } as const
}
