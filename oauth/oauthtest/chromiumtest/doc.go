// Package chromiumtest starts headless Chromium for the tests that must
// see the pages as a browser does (CSP, cookies, form posts, images):
// the authorization server's browser test and the daemon's branded-pages
// test. It is for tests only.
package chromiumtest
