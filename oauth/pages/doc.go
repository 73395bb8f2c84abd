// Package pages renders the HTML the authorization server shows a
// browser: the login and consent pages, the account page, the enrollment
// page (enroll.html, oauth/enroll), the error page
// and the page shown before an error redirect, in Dutch (the default) or
// English. Its templates, style sheet and messages are embedded; every page
// carries a Content-Security-Policy without script (the one style block by
// hash; images from 'self' when a logo is set), no-store and a same-origin
// Referrer-Policy.
//
// Options brands the pages (the ui.* keys): templates that replace the
// built-in ones by file name, the product name, a logo (served by
// ServeLogo) and the primary colour. Lang is the one language rule of
// every page; SwitchLang is the language switch that sets its cookie.
//
// pages knows nothing of OAuth: the callers (oauth's browser flow, its
// account page and its error renderer) choose the page, the language
// (Lang, RequestLang), the message keys and what the forms post.
// It imports no signd package.
package pages
