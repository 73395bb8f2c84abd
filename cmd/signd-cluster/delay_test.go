package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"io"
	"net"
	"testing"
	"time"
)

// TestDelay: bytes cross the proxy intact, in order, both ways, each way
// no sooner than the delay; a half-close crosses it too.
func TestDelay(t *testing.T) {
	const d = 40 * time.Millisecond
	echo, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer echo.Close()
	go func() {
		for {
			c, err := echo.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				_, _ = io.Copy(c, c)
				_ = c.(*net.TCPConn).CloseWrite()
			}()
		}
	}()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- serveDelay(ctx, l, echo.Addr().String(), d) }()

	c, err := net.Dial("tcp", l.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	// A round trip of one byte takes at least two delays.
	start := time.Now()
	if _, err := c.Write([]byte{7}); err != nil {
		t.Fatal(err)
	}
	one := make([]byte, 1)
	if _, err := io.ReadFull(c, one); err != nil || one[0] != 7 {
		t.Fatalf("echo of one byte: %v %v", one, err)
	}
	if rtt := time.Since(start); rtt < 2*d {
		t.Errorf("round trip took %v through a proxy that delays each way %v", rtt, d)
	}
	// 1 MiB in many writes comes back whole and in order, and the
	// half-close after it ends the echo.
	want := make([]byte, 1<<20)
	_, _ = rand.Read(want)
	go func() {
		for p := want; len(p) > 0; p = p[min(len(p), 1000):] {
			if _, err := c.Write(p[:min(len(p), 1000)]); err != nil {
				return
			}
		}
		_ = c.(*net.TCPConn).CloseWrite()
	}()
	got, err := io.ReadAll(c)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("echoed %d bytes, not the %d sent (or not in order)", len(got), len(want))
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("serveDelay after cancel: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("serveDelay did not return after its context ended")
	}
}
