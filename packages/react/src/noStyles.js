// What the stylesheet imports (#button.css, #modal.css) resolve to under the `node` condition
// (package.json "imports"): plain Node cannot load CSS, and a server render needs none. Browser
// bundles (Vite, Next.js) resolve them to the stylesheets.
export {}
