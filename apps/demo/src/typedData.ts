/** Where the demo's small transfer goes, and the "to" of its typed data: anvil's last test account. */
export const RECIPIENT = '0xa0Ee7A142d267C1f36714E4a8F75612F20a79720'

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
