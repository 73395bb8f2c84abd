// Package safepathtest holds test fixtures for the owner and mode rule of
// internal/safepath.
package safepathtest
