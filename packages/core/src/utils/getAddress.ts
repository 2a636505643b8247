// The one module of core that imports viem's address code: connectors load it with import(), so
// that the EIP-55 checksum (keccak-256 and viem's encoding helpers, about 5 KiB gzip) downloads
// when a wallet first answers instead of with the page.
export { getAddress } from 'viem'
