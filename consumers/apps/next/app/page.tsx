import { App } from './App'
import { HydrationStatus } from './HydrationStatus'

export default function Page() {
  return (
    <main>
      <App />
      <HydrationStatus />
    </main>
  )
}
