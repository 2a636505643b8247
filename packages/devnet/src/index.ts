export { type AltoInstance, type AltoParameters, alto } from './alto.js'
export { type AnvilInstance, type AnvilParameters, anvil, resolveAnvilBinary } from './anvil.js'
export { type BuildDemoParameters, type BuildDemoReturnType, buildDemo, buildWallet } from './buildDemo.js'
export { deployEntryPoint, ENTRY_POINT_ADDRESS } from './entryPoint.js'
export { BATCH_EXECUTOR_ADDRESS, deployBatchExecutor } from './executor.js'
export {
  type DefineInstanceParameters,
  DevnetError,
  defineInstance,
  getFreePort,
  type Instance,
  type InstanceStatus,
  PortInUseError,
  StartFailedError,
  StartTimeoutError,
} from './instance.js'
export { OIDC_PROVIDERS, type OidcInstanceParameters, type OidcIssuer, type OidcProviderName, oidcInstance, testSubject } from './oidc.js'
export { deployPaymasters, GUARANTOR_TOKENS, loadPaymasters, PAYMASTER_DEPOSIT, type StackPaymasters } from './paymasters.js'
export {
  DEMO_OAUTH_CLIENT_ID,
  type DevJson,
  defaultPorts,
  type Stack,
  type StackChain,
  type StackContracts,
  type StackPaymasterContracts,
  type StackUrls,
  type StartStackOptions,
  startStack,
} from './stack.js'
export { type StaticServerParameters, staticServer } from './static.js'
export { deployTestToken, TEST_TOKEN_ADDRESS } from './token.js'
