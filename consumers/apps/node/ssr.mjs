// Plain Node ESM, no DOM: server-renders the provider with the connect button, as a server framework would.
import { createClient } from '@latchkey/core'
import { ConnectButton, LatchkeyProvider } from '@latchkey/react'
import { createElement } from 'react'
import { renderToString } from 'react-dom/server'
import { mainnet } from 'viem/chains'

const client = createClient({ chains: [mainnet] })
console.log(renderToString(createElement(LatchkeyProvider, { client }, createElement(ConnectButton))))
