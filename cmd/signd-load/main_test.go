package main

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

func TestLoopbackOnly(t *testing.T) {
	for url, ok := range map[string]bool{
		"http://127.0.0.1:8443": true, "http://[::1]:80": true, "http://localhost:1": true, "https://127.0.0.2:9": true,
		"http://10.0.0.1:8443": false, "http://example.com": false, "ftp://127.0.0.1": false, "127.0.0.1:80": false,
	} {
		if _, err := loopback(url); (err == nil) != ok {
			t.Errorf("loopback(%q) = %v, want ok %v", url, err, ok)
		}
	}
}

// TestRawConn runs the lean client against net/http answering with a
// Content-Length, chunked, an error, and closing the connection.
func TestRawConn(t *testing.T) {
	var calls int
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls++
		body, _ := io.ReadAll(r.Body)
		if r.Method != http.MethodPost || r.URL.Path != "/csc/v1/signatures/signHash" || string(body) != `{"n":1}` ||
			r.Header.Get("Authorization") != "Bearer b" || r.Header.Get("Content-Type") != "application/json" {
			t.Errorf("request %s %s %q %v", r.Method, r.URL, body, r.Header)
		}
		switch calls {
		case 1: // small body: net/http adds Content-Length
			w.Write([]byte(`{"signatures":["AA=="]}`))
		case 2: // explicit flush: chunked
			w.Write([]byte(`{"signatures":`))
			w.(http.Flusher).Flush()
			w.Write([]byte(`["AA=="]}`))
		case 3:
			w.WriteHeader(http.StatusBadRequest)
			w.Write([]byte(`{"error":"invalid_request"}`))
		default:
			w.Header().Set("Connection", "close")
			w.Write([]byte(`{"signatures":["AA=="]}`))
		}
	}))
	defer srv.Close()
	c := &rawConn{addr: strings.TrimPrefix(srv.URL, "http://"), want: []byte(`"signatures":["`)}
	req := rawRequest("/csc/v1/signatures/signHash", c.addr, "Bearer b", "application/json", []byte(`{"n":1}`))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for i, wantErr := range []bool{false, false, true, false, false} {
		err := c.do(ctx, req)
		if (err != nil) != wantErr {
			t.Errorf("request %d: %v, want error %v", i+1, err, wantErr)
		}
	}
}

func TestQuantile(t *testing.T) {
	var d []time.Duration
	for i := 1; i <= 100; i++ {
		d = append(d, time.Duration(i))
	}
	if quantile(d, 0.5) != 50 || quantile(d, 0.99) != 99 || quantile(d, 1) != 100 || quantile(nil, 0.5) != 0 {
		t.Errorf("quantiles %v %v %v", quantile(d, 0.5), quantile(d, 0.99), quantile(d, 1))
	}
}
