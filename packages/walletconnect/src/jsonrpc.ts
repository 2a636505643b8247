/** JSON-RPC 2.0 shapes shared by the relay client and the Sign protocol. */

export type JsonRpcId = number

export type JsonRpcRequest<params = unknown> = { id: JsonRpcId; jsonrpc: '2.0'; method: string; params: params }
export type JsonRpcErrorObject = { code: number; message: string; data?: unknown }
export type JsonRpcResult<result = unknown> = { id: JsonRpcId; jsonrpc: '2.0'; result: result }
export type JsonRpcError = { id: JsonRpcId; jsonrpc: '2.0'; error: JsonRpcErrorObject }
export type JsonRpcResponse<result = unknown> = JsonRpcResult<result> | JsonRpcError
export type JsonRpcPayload = JsonRpcRequest | JsonRpcResponse

let last = 0

/**
 * A request id as the official clients make them: unix ms × 1000 plus three random digits, and
 * strictly increasing within one process (peers compare ids to order updates).
 *
 * @example
 * const request = { id: payloadId(), jsonrpc: '2.0', method: 'wc_sessionPing', params: {} }
 */
export function payloadId(): JsonRpcId {
  const next = Date.now() * 1000 + Math.floor(Math.random() * 1000)
  last = next > last ? next : last + 1
  return last
}

export function isRequest(payload: unknown): payload is JsonRpcRequest {
  return isObject(payload) && typeof payload.method === 'string' && 'id' in payload
}

export function isResponse(payload: unknown): payload is JsonRpcResponse {
  return isObject(payload) && !('method' in payload) && 'id' in payload && ('result' in payload || 'error' in payload)
}

export function isErrorResponse(payload: JsonRpcResponse): payload is JsonRpcError {
  return 'error' in payload
}

export function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value)
}
