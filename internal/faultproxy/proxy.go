package faultproxy

import (
	"errors"
	"io"
	"net"
	"sync"
	"time"
)

// Mode is what the proxy does with traffic right now.
type Mode int

// The modes of a Proxy.
const (
	// Open forwards every byte both ways.
	Open Mode = iota
	// Blackhole discards every byte both ways; new connections are
	// accepted and hang. Connections that lost bytes are cut when the
	// mode changes back, since their protocol stream is broken.
	Blackhole
	// DropReplies forwards the client's bytes to the server and discards
	// the server's replies; affected connections are cut afterwards.
	DropReplies
	// Delay forwards every chunk after a pause (Proxy.SetDelay).
	Delay
)

// Proxy forwards TCP connections from its listener to a target address.
// Its methods are safe for concurrent use.
type Proxy struct {
	ln     net.Listener
	target string

	mu      sync.Mutex
	mode    Mode
	delay   time.Duration
	conns   map[*pair]struct{}
	closed  bool
	wg      sync.WaitGroup
	accepts int
}

// pair is one proxied connection.
type pair struct {
	client, server net.Conn
	once           sync.Once
	mu             sync.Mutex
	damaged        bool // bytes were discarded: the stream is broken
}

func (p *pair) close() {
	p.once.Do(func() { _ = p.client.Close(); _ = p.server.Close() })
}

// Start listens on 127.0.0.1 (a free port) and forwards to target
// ("host:port").
func Start(target string) (*Proxy, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	p := &Proxy{ln: ln, target: target, conns: map[*pair]struct{}{}}
	p.wg.Add(1)
	go p.acceptLoop()
	return p, nil
}

// Addr returns the proxy's listening address, "127.0.0.1:port".
func (p *Proxy) Addr() string { return p.ln.Addr().String() }

// Port returns the proxy's listening port.
func (p *Proxy) Port() int { return p.ln.Addr().(*net.TCPAddr).Port }

// Accepted returns how many connections the proxy has accepted.
func (p *Proxy) Accepted() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.accepts
}

// SetMode switches the mode. Leaving Blackhole or DropReplies cuts every
// connection that lost bytes in it.
func (p *Proxy) SetMode(m Mode) {
	p.mu.Lock()
	p.mode = m
	var damaged []*pair
	if m == Open || m == Delay {
		for c := range p.conns {
			c.mu.Lock()
			if c.damaged {
				damaged = append(damaged, c)
			}
			c.mu.Unlock()
		}
	}
	p.mu.Unlock()
	for _, c := range damaged {
		c.close()
	}
}

// SetDelay sets the pause of Delay mode.
func (p *Proxy) SetDelay(d time.Duration) {
	p.mu.Lock()
	p.delay = d
	p.mu.Unlock()
}

// Cut closes every open connection at once (both sides); new ones are
// still accepted.
func (p *Proxy) Cut() int {
	p.mu.Lock()
	all := make([]*pair, 0, len(p.conns))
	for c := range p.conns {
		all = append(all, c)
	}
	p.mu.Unlock()
	for _, c := range all {
		c.close()
	}
	return len(all)
}

// Close stops listening, cuts every connection and waits for the proxy's
// goroutines.
func (p *Proxy) Close() error {
	p.mu.Lock()
	p.closed = true
	p.mu.Unlock()
	err := p.ln.Close()
	p.Cut()
	p.wg.Wait()
	return err
}

func (p *Proxy) acceptLoop() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		s, err := net.DialTimeout("tcp", p.target, 5*time.Second)
		if err != nil {
			_ = c.Close()
			continue
		}
		pr := &pair{client: c, server: s}
		p.mu.Lock()
		if p.closed {
			p.mu.Unlock()
			pr.close()
			return
		}
		p.conns[pr] = struct{}{}
		p.accepts++
		p.mu.Unlock()
		p.wg.Add(2)
		go p.pipe(pr, c, s, false)
		go p.pipe(pr, s, c, true)
	}
}

// pipe copies from src to dst under the current mode; reply says the bytes
// come from the server.
func (p *Proxy) pipe(pr *pair, src, dst net.Conn, reply bool) {
	defer p.wg.Done()
	defer func() {
		pr.close()
		p.mu.Lock()
		delete(p.conns, pr)
		p.mu.Unlock()
	}()
	buf := make([]byte, 32*1024)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			p.mu.Lock()
			mode, delay := p.mode, p.delay
			p.mu.Unlock()
			drop := mode == Blackhole || (mode == DropReplies && reply)
			if drop {
				pr.mu.Lock()
				pr.damaged = true
				pr.mu.Unlock()
			} else {
				if mode == Delay && delay > 0 {
					time.Sleep(delay)
				}
				if _, werr := dst.Write(buf[:n]); werr != nil {
					return
				}
			}
		}
		if err != nil {
			if !errors.Is(err, io.EOF) {
				return
			}
			return
		}
	}
}
