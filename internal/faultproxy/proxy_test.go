package faultproxy

import (
	"bufio"
	"net"
	"sync/atomic"
	"testing"
	"time"
)

// echoServer answers every line with the same line.
func echoServer(t *testing.T) (string, *atomic.Int64) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ln.Close() })
	received := new(atomic.Int64)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				r := bufio.NewReader(c)
				for {
					line, err := r.ReadString('\n')
					if err != nil {
						return
					}
					received.Add(1)
					if _, err := c.Write([]byte(line)); err != nil {
						return
					}
				}
			}()
		}
	}()
	return ln.Addr().String(), received
}

// roundTrip sends one line and waits up to d for its echo.
func roundTrip(c net.Conn, r *bufio.Reader, d time.Duration) (string, error) {
	_ = c.SetDeadline(time.Now().Add(d))
	if _, err := c.Write([]byte("ping\n")); err != nil {
		return "", err
	}
	return r.ReadString('\n')
}

func TestProxyModes(t *testing.T) {
	addr, received := echoServer(t)
	p, err := Start(addr)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	c, err := net.Dial("tcp", p.Addr())
	if err != nil {
		t.Fatal(err)
	}
	r := bufio.NewReader(c)
	if got, err := roundTrip(c, r, 2*time.Second); err != nil || got != "ping\n" {
		t.Fatalf("open: %q %v", got, err)
	}

	// DropReplies: the server gets the request, the client no answer.
	p.SetMode(DropReplies)
	before := received.Load()
	if _, err := roundTrip(c, r, 300*time.Millisecond); err == nil {
		t.Fatal("a reply came through DropReplies")
	}
	if received.Load() != before+1 {
		t.Fatalf("the server did not receive the request under DropReplies: %d -> %d", before, received.Load())
	}
	p.SetMode(Open) // cuts the damaged connection
	if _, err := roundTrip(c, r, time.Second); err == nil {
		t.Fatal("a connection that lost a reply was not cut")
	}

	// Delay.
	c2, err := net.Dial("tcp", p.Addr())
	if err != nil {
		t.Fatal(err)
	}
	r2 := bufio.NewReader(c2)
	p.SetDelay(200 * time.Millisecond)
	p.SetMode(Delay)
	start := time.Now()
	if _, err := roundTrip(c2, r2, 3*time.Second); err != nil {
		t.Fatal(err)
	}
	if el := time.Since(start); el < 350*time.Millisecond {
		t.Fatalf("delay mode answered after %s", el)
	}
	p.SetMode(Open)

	// Blackhole: nothing arrives at the server.
	p.SetMode(Blackhole)
	before = received.Load()
	if _, err := roundTrip(c2, r2, 300*time.Millisecond); err == nil {
		t.Fatal("an answer came through a black hole")
	}
	if received.Load() != before {
		t.Fatal("the server received bytes through a black hole")
	}
	p.SetMode(Open)

	// Cut.
	c3, err := net.Dial("tcp", p.Addr())
	if err != nil {
		t.Fatal(err)
	}
	r3 := bufio.NewReader(c3)
	if _, err := roundTrip(c3, r3, 2*time.Second); err != nil {
		t.Fatal(err)
	}
	if n := p.Cut(); n < 1 {
		t.Fatalf("Cut closed %d connections", n)
	}
	if _, err := roundTrip(c3, r3, time.Second); err == nil {
		t.Fatal("a cut connection still works")
	}
	if p.Accepted() < 3 {
		t.Fatalf("accepted %d", p.Accepted())
	}
}
