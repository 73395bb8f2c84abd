// Command gendoc rewrites the key table of docs/CONFIG.md from the key
// table of package config (config.SpliceReference). `go generate ./config`
// runs it; the prose around the table stays as written.
//
//	go run ./config/internal/gendoc docs/CONFIG.md
package main
