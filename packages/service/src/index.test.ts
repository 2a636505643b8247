import { expect, test } from 'vitest'

test('default: exports', async () => {
  expect(Object.keys(await import('./index.js')).sort()).toMatchInlineSnapshot(`
    [
      "DEVELOPMENT_AUDIT_KEY",
      "EXIT",
      "LOG_LEVELS",
      "SettingsError",
      "auditSettings",
      "auditVerifyCommand",
      "baseSettings",
      "checkOrigin",
      "checkUrl",
      "choice",
      "closeGracefully",
      "createHttpObserver",
      "createLogger",
      "currentRequestId",
      "custom",
      "hexBytes",
      "integer",
      "list",
      "origin",
      "parseSettings",
      "pathOf",
      "port",
      "productionGaps",
      "runService",
      "scrub",
      "secret",
      "secretUrl",
      "settingLabel",
      "settingsHelp",
      "text",
      "toggle",
      "url",
      "withRequestId",
      "withoutCredentials",
    ]
  `)
})
