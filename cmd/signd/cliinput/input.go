package cliinput

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
)

// MaxSecretFile bounds password, PIN and secret files.
const MaxSecretFile = 4096

// ReadSecret reads a password, PIN or secret from path ("-" = stdin),
// trimming one trailing newline. The value is never echoed.
func ReadSecret(stdin io.Reader, what, path string) (string, error) {
	data, err := ReadFile(stdin, what, path, MaxSecretFile)
	if err != nil {
		return "", err
	}
	s := strings.TrimSuffix(string(data), "\n")
	s = strings.TrimSuffix(s, "\r")
	if s == "" {
		return "", fmt.Errorf("%s file %s is empty", what, path)
	}
	return s, nil
}

// ReadFile reads at most limit bytes from path ("-" = stdin).
func ReadFile(stdin io.Reader, what, path string, limit int64) ([]byte, error) {
	var r io.Reader
	if path == "-" {
		r = stdin
	} else {
		f, err := os.Open(path)
		if err != nil {
			return nil, fmt.Errorf("%s file: %w", what, err)
		}
		defer f.Close()
		r = f
	}
	data, err := io.ReadAll(io.LimitReader(r, limit+1))
	if err != nil {
		return nil, fmt.Errorf("%s file %s: %w", what, path, err)
	}
	if int64(len(data)) > limit {
		return nil, fmt.Errorf("%s file %s is larger than %d bytes", what, path, limit)
	}
	return data, nil
}

// OneStdin refuses two flags that both read stdin.
func OneStdin(paths ...string) error {
	n := 0
	for _, p := range paths {
		if p == "-" {
			n++
		}
	}
	if n > 1 {
		return errors.New("only one of the file flags can read stdin (-)")
	}
	return nil
}

// ParseClaims decodes a flat JSON object of strings, refusing duplicate
// keys, non-string values and trailing data. Which keys are allowed is
// checked by the admin service.
func ParseClaims(data []byte) (map[string]string, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	tok, err := dec.Token()
	if err != nil {
		return nil, fmt.Errorf("not JSON: %v", err)
	}
	if d, ok := tok.(json.Delim); !ok || d != '{' {
		return nil, errors.New("must be a JSON object")
	}
	out := map[string]string{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, fmt.Errorf("not JSON: %v", err)
		}
		key := tok.(string) // object keys are always strings
		tok, err = dec.Token()
		if err != nil {
			return nil, fmt.Errorf("not JSON: %v", err)
		}
		val, ok := tok.(string)
		if !ok {
			return nil, fmt.Errorf("value of %q must be a string", key)
		}
		if _, dup := out[key]; dup {
			return nil, fmt.Errorf("key %q appears twice", key)
		}
		out[key] = val
	}
	if _, err := dec.Token(); err != nil {
		return nil, fmt.Errorf("not JSON: %v", err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("trailing data after the JSON object")
	}
	return out, nil
}
