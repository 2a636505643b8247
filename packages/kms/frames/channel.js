// Generated from src/frames/browser/channel.ts by `npm run build:frames -w @latchkey/kms`. Do not edit.
import { DEFAULT_EMBEDDED_KEY_TTL_MS } from './embeddedKey.js';
import { FrameError } from './encoding.js';
// The @turnkey/iframe-stamper protocol, frame side (research/turnkey-api.md §5):
//  1. The embedding page posts {type: TURNKEY_INIT_MESSAGE_CHANNEL, dangerouslyOverrideIframeKeyTtl?}
//     to this frame's origin on `load`, transferring a MessagePort.
//  2. The frame answers on that port with {type: PUBLIC_KEY_READY, value: <embedded key, uncompressed hex>}.
//  3. Every later request comes over the port as {type, requestId, value?, …}; the frame answers
//     {type, value, requestId}, or {type: ERROR, value: <message>, requestId}.
// Unlike the hosted frames, the channel is opened only by the embedding page itself, from an
// allowed origin, when this frame is not nested deeper; everything else is refused with a
// legacy {type: ERROR} message to the sender (and a console warning), so a refused page can tell.
export const INIT_MESSAGE = 'TURNKEY_INIT_MESSAGE_CHANNEL';
/**
 * Why this frame must not run where it is, if it must not: not framed, framed inside another
 * frame, or embedded by a page whose origin is not allowed (where the browser tells us).
 */
export function framingProblem(window, parentOrigins) {
    if (window.parent === window)
        return 'this page runs only inside a frame of an allowed app';
    if (window.top !== window.parent)
        return 'this frame refuses to run inside a nested frame';
    const ancestors = window.location.ancestorOrigins;
    if (ancestors) {
        if (ancestors.length > 1)
            return 'this frame refuses to run inside a nested frame';
        const embedder = ancestors.item(0);
        if (embedder !== null && !parentOrigins.includes(embedder))
            return `origin ${embedder} is not allowed to embed this frame`;
    }
    return undefined;
}
/**
 * Listens for the embedding page's channel and answers its requests one at a time, in order.
 * Returns why the frame refuses to run, if it does (the page then shows nothing but that).
 *
 * @example
 * openFrameChannel({ window, page: 'auth', parentOrigins, keys, handlers: { STAMP_REQUEST: stamp } })
 */
export function openFrameChannel(parameters) {
    const { window, page, parentOrigins, keys } = parameters;
    const log = parameters.log ?? ((message) => console.warn(`[latchkey ${page} frame] ${message}`));
    const refused = framingProblem(window, parentOrigins);
    let open;
    window.addEventListener('message', (event) => {
        const data = event.data;
        if (!isObject(data) || data['type'] !== INIT_MESSAGE)
            return;
        const refusal = refused ?? refuseInit(event, data);
        if (refusal) {
            log(`refused a channel from ${event.origin}: ${refusal}`);
            answerRefusal(event, refusal);
            return;
        }
        const ttl = data['dangerouslyOverrideIframeKeyTtl'];
        open = { port: event.ports[0], parentOrigin: event.origin, ttlMs: typeof ttl === 'number' ? ttl : DEFAULT_EMBEDDED_KEY_TTL_MS };
        serve(open);
    });
    function refuseInit(event, data) {
        if (event.source !== window.parent)
            return 'the channel must be opened by the page that embeds this frame';
        if (!parentOrigins.includes(event.origin))
            return `origin ${event.origin} is not allowed to open a channel to this frame`;
        if (open)
            return 'a channel is already open';
        if (!event.ports[0])
            return `${INIT_MESSAGE} must transfer a MessagePort`;
        const ttl = data['dangerouslyOverrideIframeKeyTtl'];
        if (ttl !== undefined && (typeof ttl !== 'number' || !Number.isSafeInteger(ttl) || ttl <= 0))
            return 'dangerouslyOverrideIframeKeyTtl must be a positive whole number of milliseconds';
        return undefined;
    }
    function serve(channel) {
        const { port, parentOrigin } = channel;
        // Read from storage at each use: it expires there, and another tab may have reset it.
        const context = {
            parentOrigin,
            async embeddedKey() {
                const key = await keys.get(parentOrigin);
                if (!key)
                    throw new FrameError('this frame has no embedded key (it was reset or has expired): initialise a new one');
                return key;
            },
            resetEmbeddedKey: () => keys.reset(),
        };
        const common = {
            async GET_EMBEDDED_PUBLIC_KEY() {
                return { type: 'EMBEDDED_PUBLIC_KEY', value: (await keys.get(parentOrigin))?.publicKeyHex ?? null };
            },
            async INIT_EMBEDDED_KEY() {
                return { type: 'EMBEDDED_PUBLIC_KEY', value: (await keys.getOrCreate(parentOrigin, channel.ttlMs)).publicKeyHex };
            },
            async RESET_EMBEDDED_KEY() {
                context.resetEmbeddedKey();
                parameters.onReset?.();
                return { type: 'EMBEDDED_KEY_RESET', value: true };
            },
        };
        // Requests run one after another, after the key the handshake announces exists.
        let queue = (async () => {
            const key = await keys.getOrCreate(parentOrigin, channel.ttlMs);
            port.postMessage({ type: 'PUBLIC_KEY_READY', value: key.publicKeyHex });
        })().catch((error) => log(`could not create the embedded key: ${String(error)}`));
        port.onmessage = (event) => {
            queue = queue.then(() => answer(event.data));
        };
        async function answer(data) {
            if (!isObject(data) || !isShortString(data['type'], 64) || !isShortString(data['requestId'], 128)) {
                log('ignored a message without a type and a requestId');
                return;
            }
            const request = data;
            try {
                const handler = Object.hasOwn(common, request.type)
                    ? common[request.type]
                    : Object.hasOwn(parameters.handlers, request.type)
                        ? parameters.handlers[request.type]
                        : undefined;
                if (!handler)
                    throw new FrameError(`the ${page} frame does not handle ${request.type}`);
                const reply = await handler(request, context);
                port.postMessage({ type: reply.type, value: reply.value, requestId: request.requestId });
            }
            catch (error) {
                if (!(error instanceof FrameError))
                    log(`${request.type} failed: ${error instanceof Error ? error.name : 'error'}`);
                const message = error instanceof FrameError ? error.message : `the ${page} frame could not complete ${request.type}`;
                port.postMessage({ type: 'ERROR', value: message, requestId: request.requestId });
            }
        }
    }
    return { refused };
}
/** The legacy error reply of the hosted frames, sent only to the window and origin that asked. */
function answerRefusal(event, message) {
    const source = event.source;
    if (!source?.postMessage || !event.origin || event.origin === 'null')
        return;
    try {
        source.postMessage({ type: 'ERROR', value: message }, { targetOrigin: event.origin });
    }
    catch {
        // The sender is gone or is not a window: nobody to tell.
    }
}
const isObject = (value) => typeof value === 'object' && value !== null && !Array.isArray(value);
const isShortString = (value, maxLength) => typeof value === 'string' && value.length > 0 && value.length <= maxLength;
/** A required string field of a request, at most `maxLength` characters. */
export function stringField(request, field, maxLength = 64 * 1024) {
    const value = request[field];
    if (typeof value !== 'string' || value.length === 0)
        throw new FrameError(`${request.type} needs ${field} (a string)`);
    if (value.length > maxLength)
        throw new FrameError(`${request.type}: ${field} is longer than ${maxLength} characters`);
    return value;
}
