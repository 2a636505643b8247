// A remote-desktop authenticator, as chrome.webAuthenticationProxy lets one stand in for the
// machine's: every ceremony it is handed fails the way WebAuthn reports a failing authenticator
// (UnknownError). Chromium passes the DOMException on to the page as it is given here.
const proxy = chrome.webAuthenticationProxy
const failure = { name: 'UnknownError', message: 'The remote authenticator failed.' }
proxy.onCreateRequest.addListener(({ requestId }) => void proxy.completeCreateRequest({ requestId, error: failure }))
proxy.onGetRequest.addListener(({ requestId }) => void proxy.completeGetRequest({ requestId, error: failure }))
proxy.onIsUvpaaRequest.addListener(({ requestId }) => void proxy.completeIsUvpaaRequest({ requestId, isUvpaa: true }))
// The test waits for this before the ceremony: undefined once attached, else why not.
self.attached = proxy.attach()
