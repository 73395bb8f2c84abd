// Package schema is the machinery of package config's one key table,
// config.Keys, and knows none of its rows: Key (a name, a typed default,
// a flag, a usage, a Doc and whether a reload applies it), how a YAML
// file is read against a table (ReadYAML: a regular file of at most
// MaxFileBytes, duplicate keys refused; Sift: unknown keys and sections
// reported with a "did you mean"), strict decoding into a struct (Decode:
// strings stay strings, so an unquoted PIN is refused rather than
// mangled, durations need a unit, lists come as lists or
// comma-separated), the problems (Problem, Error: every bad key at once,
// in the table's order), the values (Settings; Changed, which compares
// two configurations as loaded; Secret, which redacts itself everywhere
// but Reveal) and the renderings of a table (Reference, the key table of
// docs/CONFIG.md, spliced between its markers by SpliceReference;
// Example, a commented configuration file).
//
// Which keys exist, their defaults and their validation are package
// config's; config names these types under the same names.
package schema
