package bench

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// mode is one way of consuming the workload.
type mode interface {
	// newWorker returns the client of one concurrent loop.
	newWorker() worker
	// drained is called once the last message is taken, inside the timed
	// part: the nats modes flush their fire-and-forget acks to the server.
	drained() error
	// settledDown waits until no pull of earlier callers is left open on
	// the server, before publishing and before the Fetch(1) samples.
	settledDown(ctx context.Context) error
	// fetchOne has pub store one message, takes it with a Fetch(1) and
	// settles it; it returns how long the Fetch took (Fetches, should one
	// come back empty, up to fetchOneLimit).
	fetchOne(ctx context.Context, pub func(context.Context) error) (time.Duration, error)
	// close releases what the mode set up.
	close()
}

// ownGateway is a mode that may have a gateway process of its own (the
// floor's, the pusher's) rather than the bench's jetgate: 0 when not.
type ownGateway interface {
	gatewayPID() int
}

// ownEndpoint is a mode with an endpoint process of its own (push's).
type ownEndpoint interface {
	endpointPID() int
}

// endpointPID is m's endpoint process; 0 when it has none.
func endpointPID(m mode) int {
	if e, ok := m.(ownEndpoint); ok {
		return e.endpointPID()
	}
	return 0
}

// gatewayPID is the process serving m: its own, else the deployed jetgate.
func gatewayPID(m mode, o Options) int {
	if g, ok := m.(ownGateway); ok && g.gatewayPID() > 0 {
		return g.gatewayPID()
	}
	return o.jetgatePID
}

// worker is one loop's client.
type worker interface {
	// round fetches up to a batch and settles it, calling took with the
	// count of each message or group of messages settled.
	round(ctx context.Context, took func(n int)) error
}

// modeTimeout bounds a mode's timed part, should messages go missing.
const modeTimeout = 2 * time.Minute

// fetchOneLimit bounds the wait for the one message ready, settleDownLimit
// the wait for the workers' pulls to end.
const (
	fetchOneLimit   = 5 * time.Second
	settleDownLimit = 5 * time.Second
)

// measure publishes the mode's messages, then times consuming them with
// o.Workers loops, then samples its Fetch(1) latency.
func measure(ctx context.Context, name string, m mode, subject string, pub publisher, o Options) (Result, error) {
	if err := m.settledDown(ctx); err != nil { // the last mode's pulls
		return Result{}, err
	}
	if err := pub.publish(ctx, subject, o.Messages); err != nil {
		return Result{}, err
	}
	r, err := throughput(ctx, name, m, o)
	if err != nil {
		return r, err
	}
	if err := m.settledDown(ctx); err != nil {
		return r, err
	}
	one := func(ctx context.Context) error { return pub.publish(ctx, subject, 1) }
	r.Fetch1, err = fetchLatency(ctx, m, one, o.Samples)
	return r, err
}

// throughput consumes o.Messages with o.Workers loops and reads the
// process's CPU time and allocations before and after.
func throughput(ctx context.Context, name string, m mode, o Options) (Result, error) {
	ctx, cancel := context.WithTimeout(ctx, modeTimeout)
	defer cancel()
	stopProfile, err := startProfile(o.CPUProfile, name)
	if err != nil {
		return Result{}, err
	}
	runtime.GC() // the publishing's garbage is not this mode's
	pids := [3]int{o.natsPID, gatewayPID(m, o), endpointPID(m)}
	var (
		left     atomic.Int64
		once     sync.Once
		mu       sync.Mutex
		firstErr error
		end      time.Time
		after    usage
	)
	fail := func(err error) {
		mu.Lock()
		if firstErr == nil {
			firstErr = err
		}
		mu.Unlock()
		cancel()
	}
	took := func(n int) {
		if left.Add(-int64(n)) > 0 {
			return
		}
		once.Do(func() {
			if err := m.drained(); err != nil {
				fail(err)
			}
			end, after = time.Now(), readUsage(pids)
		})
	}
	// The workers finish their rounds rather than being canceled: a Fetch
	// canceled mid-wait leaves its pull open on the server, where it would
	// take the message of the first Fetch(1) sample.
	left.Store(int64(o.Messages))
	before := readUsage(pids)
	start := time.Now()
	var wg sync.WaitGroup
	for range o.Workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			w := m.newWorker()
			if c, ok := w.(interface{ Close() error }); ok {
				defer c.Close()
			}
			for left.Load() > 0 {
				if err := w.round(ctx, took); err != nil {
					if left.Load() > 0 {
						fail(err)
					}
					return
				}
			}
		}()
	}
	wg.Wait()
	stopProfile()
	if firstErr != nil {
		return Result{}, firstErr
	}
	if l := left.Load(); l > 0 {
		return Result{}, fmt.Errorf("%d of %d messages not taken after %v", l, o.Messages, modeTimeout)
	}
	return newResult(name, o.Messages, end.Sub(start), after.minus(before)), nil
}

// usage is what the bench's process has used so far (in process: the NATS
// server, jetgate and the bench's clients alike), and, deployed, the CPU of
// the NATS server's process and the gateway's.
type usage struct {
	cpu      time.Duration // user + system
	bytes    uint64        // heap bytes allocated
	mallocs  uint64        // heap objects allocated
	nats     time.Duration // the NATS server process's CPU
	gateway  time.Duration // the gateway process's CPU
	endpoint time.Duration // the push endpoint process's CPU
}

// readUsage reads the usage; pids are the NATS server's, the gateway's and
// the push endpoint's processes, 0 when they run in this one (or, the
// endpoint, when there is none).
func readUsage(pids [3]int) usage {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return usage{cpu: processCPU(), bytes: ms.TotalAlloc, mallocs: ms.Mallocs,
		nats: pidCPU(pids[0]), gateway: pidCPU(pids[1]), endpoint: pidCPU(pids[2])}
}

func (u usage) minus(v usage) usage {
	return usage{cpu: u.cpu - v.cpu, bytes: u.bytes - v.bytes, mallocs: u.mallocs - v.mallocs,
		nats: u.nats - v.nats, gateway: u.gateway - v.gateway, endpoint: u.endpoint - v.endpoint}
}

// profileFile is file with mode before its extension (cpu.out: cpu.grpc.out).
func profileFile(file, mode string) string {
	if file == "" || mode == "" {
		return file
	}
	ext := filepath.Ext(file)
	return strings.TrimSuffix(file, ext) + "." + mode + ext
}

// Sampling of the block and mutex profiles: a blocking event every
// microsecond blocked on average, and every contention on a lock.
const (
	blockProfileRate     = 1000
	mutexProfileFraction = 1
)

// startContention records blocking and lock contention, and on stop writes
// the block profile to block and the mutex profile to mutex (either may be
// empty: not that one).
func startContention(block, mutex string) (stop func() error) {
	if block != "" {
		runtime.SetBlockProfileRate(blockProfileRate)
	}
	if mutex != "" {
		runtime.SetMutexProfileFraction(mutexProfileFraction)
	}
	return func() error {
		var errs []error
		for _, p := range []struct{ name, file string }{{"block", block}, {"mutex", mutex}} {
			if p.file == "" {
				continue
			}
			f, err := os.Create(p.file)
			if err == nil {
				err = errors.Join(pprof.Lookup(p.name).WriteTo(f, 0), f.Close())
			}
			errs = append(errs, err)
		}
		runtime.SetBlockProfileRate(0)
		runtime.SetMutexProfileFraction(0)
		return errors.Join(errs...)
	}
}

// startProfile starts a CPU profile of the mode in file (with the mode's
// name, if any, before its extension); with no file it does nothing.
func startProfile(file, mode string) (stop func(), err error) {
	if file == "" {
		return func() {}, nil
	}
	f, err := os.Create(profileFile(file, mode))
	if err != nil {
		return nil, err
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, err
	}
	return func() {
		pprof.StopCPUProfile()
		f.Close()
	}, nil
}
