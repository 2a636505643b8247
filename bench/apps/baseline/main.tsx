import { StrictMode } from 'react'
import { createRoot } from 'react-dom/client'

// The floor: React alone with a plain button, as in research/bundle-anchors.md variant a.
createRoot(document.getElementById('root') as HTMLElement).render(
  <StrictMode>
    <button type="button">Connect Wallet</button>
  </StrictMode>,
)
