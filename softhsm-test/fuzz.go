package softhsmtest

import "flag"

// FuzzOnly reports whether the test binary runs only fuzz targets or lists
// tests: `go test -fuzz FuzzX` (the coordinator and its workers) or
// `go test -list RE`. The fuzz targets of signd need no token, so a TestMain
// calls it first and skips the token set-up when it returns true; fuzzing
// then runs on machines without SoftHSM2.
//
// When -run is not given, FuzzOnly narrows it to the -fuzz pattern, so that
// `go test -fuzz FuzzX ./pkg` does not first run the package's unit tests
// (which need the token) on the way to the fuzz target.
//
// It parses the command line (flag.Parse), as TestMain must before reading
// test flags.
func FuzzOnly() bool {
	if !flag.Parsed() {
		flag.Parse()
	}
	get := func(name string) string {
		if f := flag.Lookup(name); f != nil {
			return f.Value.String()
		}
		return ""
	}
	if get("test.list") != "" {
		return true
	}
	pattern := get("test.fuzz")
	if pattern == "" {
		return false
	}
	if get("test.run") == "" {
		_ = flag.Set("test.run", pattern)
	}
	return true
}
