export { type AnvilInstance, type AnvilParameters, anvil, resolveAnvilBinary } from './anvil.js'
export { type BuildDemoParameters, type BuildDemoReturnType, buildDemo, buildWallet } from './buildDemo.js'
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
export { type DevJson, defaultPorts, type Stack, type StackChain, type StackUrls, type StartStackOptions, startStack } from './stack.js'
export { type StaticServerParameters, staticServer } from './static.js'
