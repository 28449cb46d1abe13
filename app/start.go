package app

import (
	"context"
	"errors"
	"sync"
	"time"
)

// Process is a jetgate running in this process, started by Start.
type Process struct {
	Addrs
	cancel context.CancelFunc
	done   chan error
	once   sync.Once
	err    error
}

// Start runs jetgate with o in a goroutine and returns once it serves, or
// with Run's error if it stops first. Stop ends it. Tests and the bench run
// whole processes this way.
func Start(ctx context.Context, o Options) (*Process, error) {
	ctx, cancel := context.WithCancel(ctx)
	started := make(chan Addrs, 1)
	next := o.Started
	o.Started = func(a Addrs) {
		if next != nil {
			next(a)
		}
		started <- a
	}
	p := &Process{cancel: cancel, done: make(chan error, 1)}
	go func() { p.done <- Run(ctx, o) }()
	select {
	case a := <-started:
		p.Addrs = a
		return p, nil
	case err := <-p.done:
		cancel()
		if err == nil {
			err = errors.New("jetgate stopped before it served")
		}
		return nil, err
	}
}

// Stop cancels the process and waits for Run to return; it returns what Run
// returned. Calling it again returns the same.
func (p *Process) Stop() error {
	p.once.Do(func() {
		p.cancel()
		p.err = <-p.done
	})
	return p.err
}

// StopWithin is Stop that gives up waiting after d.
func (p *Process) StopWithin(d time.Duration) error {
	stopped := make(chan error, 1)
	go func() { stopped <- p.Stop() }()
	select {
	case err := <-stopped:
		return err
	case <-time.After(d):
		return errors.New("jetgate did not stop in time")
	}
}
