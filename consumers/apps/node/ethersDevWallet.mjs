// Plain Node ESM: ethers v6's BrowserProvider over Latchkey's dev wallet (an EIP-1193 provider)
// signs a message and sends 0.001 ETH on the chain whose RPC url is the first argument.
import { createDevWallet } from '@latchkey/core/dev'
import { BrowserProvider, parseEther } from 'ethers'
import { defineChain } from 'viem'

const [rpcUrl, privateKey, recipient] = process.argv.slice(2)
const chain = defineChain({
  id: 31337,
  name: 'Anvil',
  nativeCurrency: { name: 'Ether', symbol: 'ETH', decimals: 18 },
  rpcUrls: { default: { http: [rpcUrl] } },
})
const wallet = createDevWallet({ privateKey, chains: [chain] })
const provider = new BrowserProvider(wallet)
const signer = await provider.getSigner()
const signature = await signer.signMessage('ethers gm')
const sent = await signer.sendTransaction({ to: recipient, value: parseEther('0.001') })
console.log(JSON.stringify({ address: signer.address, signature, hash: sent.hash }))
