// Package docs holds signd's documentation: the markdown pages a reader
// opens from README.md and docs/openapi.yaml. It has no code; its tests
// keep README.md short and every relative link of README.md, CHANGELOG.md
// and docs/*.md pointing at a file and heading that exist.
package docs
