// Package config owns signd's configuration: the typed Config, loading it
// from a YAML file, SIGND_* environment variables and command-line flags,
// validating it with every bad key reported at once, and the Secret type
// that keeps the token PIN out of printouts and logs. Keys is the one key
// table; the machinery that reads, decodes and renders any such table
// (and Secret) is package config/schema, whose types config names under
// the same names.
//
// It does not open anything the configuration names (HSM module, database,
// listeners, log sinks): cmd/signd maps Config onto the options of hsm, store
// and the servers. Validate only looks at the file system where a setting
// is a file that must already exist (TLS files, pkcs11.pin_file).
//
// # Sources and precedence
//
// Load layers four sources on one viper.New() instance (never viper's
// globals), each overriding the ones before it:
//
//  1. the defaults in Keys;
//  2. the YAML file: Options.File (--config) if given, which must then exist,
//     otherwise /etc/signd/signd.yaml if it exists (never a file of the
//     working directory), otherwise none. The file must be owned by root or
//     the effective uid and not writable by group or others, and so must
//     every directory above it (internal/safepath), or Load refuses it
//     before reading it;
//  3. environment variables: SIGND_ plus the key in upper case with dots as
//     underscores, e.g. SIGND_SERVER_BASE_URL, SIGND_PKCS11_PIN (an empty
//     variable counts as unset);
//  4. the flags registered by BindFlags that were set on the command line.
//
// Keys are lower case and dotted ("server.tls.cert_file"); in the file each
// dot is a level of nesting.
//
// # Strictness
//
// Every key has a default or is required (server.base_url; and exactly one
// of pkcs11.pin and pkcs11.pin_file). A key in the file that is not in Keys
// is an error naming the full key (unknown key "server.lisen"), as is an
// unknown section. Duplicate keys are refused by the YAML parser. Values are
// typed strictly: strings must be strings (quote them: YAML reads an
// unquoted PIN 0123 as the number 83), durations need a unit ("30s"), and
// integers must be integers. Load and Validate return an *Error listing every
// bad key, one line each; a file that cannot be read or parsed is a plain
// error naming the file.
//
// Relative paths (store.path, server.admin_socket, pkcs11.pin_file, ...) are
// relative to the working directory, not to the config file.
//
// # Secrets
//
// The PIN is a Secret: fmt with any verb, slog, encoding/json and
// encoding.TextMarshaler all see "[REDACTED]". Only Secret.Reveal returns the
// value. There is no flag for the PIN (argv is public); give it through
// pkcs11.pin_file (mode 0600 or stricter, checked) or SIGND_PKCS11_PIN.
// PKCS11Config.PINValue returns whichever is configured.
//
// # Adding a section
//
// Add the section struct and its field in Config (mapstructure tags carry
// the key names), its rows in Keys (default, flag, usage, a Doc when
// docs/CONFIG.md should say more than the usage line, and Reload only
// when cmd/signd/reload puts a new value in force: a reload that changes
// any other key is refused), and a checks
// method returning its {key, msg} validation table, called from
// Config.problems. Then run `go generate ./config`: it rewrites the key
// table of docs/CONFIG.md (Reference, SpliceReference), and
// TestConfigDocUpToDate fails until it has. Load, the environment variables, the unknown-key check
// and Settings follow from the table and the tags; a test fails if a struct
// field has no row in Keys or a row has no field.
//
// # Caveats
//
// Viper only reads environment variables for keys it knows, so Load calls
// SetDefault and BindEnv for every key in Keys; a struct field without a row
// in the table could be set by no source at all (the file would call it
// unknown), which TestKeysTableMatchesStruct prevents.
// Secret redaction works through methods: code that walks values with
// reflect (some pretty-printers) can still see the value.
package config
