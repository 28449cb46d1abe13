package settle

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetgate/jetgate/internal/errs"
	"github.com/jetgate/jetgate/internal/lease"
	"github.com/jetgate/jetgate/internal/natsname"
)

// LedgerBucket is the JetStream KV bucket of the ledger.
const LedgerBucket = "jetgate_settles"

// ledgerSlack is kept on top of a delivery's ack wait when a record is aged
// out, for clocks that differ between replicas.
const ledgerSlack = 2 * time.Second

// claimWorkers bounds the ledger requests one batch has in flight.
const claimWorkers = 32

// Ledger is what every replica knows about settles that the lease table of
// one replica cannot: whether a delivery was already nak'ed (and so
// superseded before its deadline) or settled by a replica acting on its
// token alone. JetStream applies a settle by stream sequence and ignores the
// delivery count, so without it a stale settle could land on the next
// delivery. It lives in a JetStream KV bucket, one key per delivery, written
// with compare-and-set (only the first settle of a delivery is recorded) and
// aged out once no token of that delivery can be live.
type Ledger struct {
	kv jetstream.KeyValue
}

// OpenLedger creates or updates the ledger's bucket with the given number of
// replicas (match the streams': the ledger must survive what they survive).
func OpenLedger(ctx context.Context, js jetstream.JetStream, replicas int) (*Ledger, error) {
	kv, err := js.CreateOrUpdateKeyValue(ctx, jetstream.KeyValueConfig{
		Bucket:         LedgerBucket,
		Description:    "jetgate: settles of deliveries, shared by replicas (aged out per key)",
		History:        1,
		Replicas:       max(replicas, 1),
		LimitMarkerTTL: time.Second,
	})
	if err != nil {
		return nil, fmt.Errorf("create or update the KV bucket %s: %w", LedgerBucket, err)
	}
	return &Ledger{kv: kv}, nil
}

// Entry is a delivery to record.
type Entry struct {
	Stream, Consumer     string
	StreamSeq, Delivered uint64
	TTL                  time.Duration // how long a token of the delivery may still be live
	// Since is, for a delivery known to be made after it, when the last
	// consumer reset was noticed. A reset restarts the delivery counts, so
	// a record stored before it is of an earlier delivery with the same
	// key: it counts as none, and Claim takes its place. Zero: every
	// record counts (the delivery may be from before the reset).
	Since time.Time
}

func (e Entry) key() string {
	return natsname.Key(e.Stream, e.Consumer) + "." + strconv.FormatUint(e.StreamSeq, 10) + "." + strconv.FormatUint(e.Delivered, 10)
}

// Claim records op for each entry unless a settle of that delivery is
// recorded already (a record from before the entry's Since is not: it is
// purged, and op recorded in its place). For each entry it returns 0 when
// op was recorded now, or the op recorded before; an error marks an entry
// whose outcome it could not learn (errs.ErrUnavailable), such as one whose
// record changed under each of its three tries.
func (l *Ledger) Claim(ctx context.Context, op lease.Op, es []Entry) ([]lease.Op, []error) {
	return l.each(ctx, es, func(ctx context.Context, e Entry) (lease.Op, error) {
		for try := 0; ; try++ {
			_, err := l.kv.Create(ctx, e.key(), []byte{byte(op)}, jetstream.KeyTTL(e.TTL+ledgerSlack))
			if !written(err) {
				return 0, err
			}
			prior, earlier, err := l.record(ctx, e)
			switch {
			case prior != 0 || err != nil:
				return prior, err
			case try == 2:
				return 0, errors.New("the record of " + e.key() + " changed under every claim")
			case earlier != 0:
				// An earlier delivery's: purged by its revision (a record
				// written since is kept), and claimed again.
				err := l.kv.Purge(ctx, e.key(), jetstream.LastRevision(earlier), jetstream.PurgeTTL(e.TTL+ledgerSlack))
				if err != nil && !errors.Is(err, jetstream.ErrKeyRevisionMismatch) {
					return 0, err
				}
			}
			// Released (Release) between the create and the lookup: again.
		}
	})
}

// written reports whether a Create failed because the key was written
// meanwhile. nats.go says so with ErrKeyExists, except for a Create over a
// delete or purge marker (a record released or taken over), which returns
// the server's error as it is: on a replicated bucket, code 10164, which
// ErrKeyExists (10071) does not match.
func written(err error) bool {
	var api *jetstream.APIError
	return errors.Is(err, jetstream.ErrKeyExists) ||
		errors.As(err, &api) && api.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequenceConstant
}

// Release purges the record of each entry that holds op: a settle its
// caller claimed and then, for sure, did not send (its request found no
// responders, or it was not sent at all), so that its retry claims it
// again rather than find it done. The caller releases only a record that
// is surely its own (within its TTL of the claim: no other claim of the
// delivery can be made meanwhile); the purge is by the revision read, so a
// record written since is kept, and its marker ages out as the record
// would have. Best effort: an entry that cannot be released keeps its
// record, and has an error (errs.ErrUnavailable).
func (l *Ledger) Release(ctx context.Context, op lease.Op, es []Entry) []error {
	if l == nil || len(es) == 0 {
		return make([]error, len(es))
	}
	_, fails := l.each(ctx, es, func(ctx context.Context, e Entry) (lease.Op, error) {
		kve, err := l.kv.Get(ctx, e.key())
		switch {
		case errors.Is(err, jetstream.ErrKeyNotFound), errors.Is(err, jetstream.ErrKeyDeleted):
			return 0, nil // none left to release
		case err != nil:
			return 0, err
		case len(kve.Value()) != 1 || lease.Op(kve.Value()[0]) != op:
			return 0, nil // another op's: kept
		}
		err = l.kv.Purge(ctx, e.key(), jetstream.LastRevision(kve.Revision()), jetstream.PurgeTTL(e.TTL+ledgerSlack))
		if errors.Is(err, jetstream.ErrKeyRevisionMismatch) {
			return 0, nil // written since: kept
		}
		return 0, err
	})
	return fails
}

// Lookup returns the op recorded for each entry, 0 for none.
func (l *Ledger) Lookup(ctx context.Context, es []Entry) ([]lease.Op, []error) {
	return l.each(ctx, es, l.lookup)
}

func (l *Ledger) lookup(ctx context.Context, e Entry) (lease.Op, error) {
	op, _, err := l.record(ctx, e)
	return op, err
}

// record is the settle recorded for e, 0 for none. A record stored before
// e.Since counts as none; earlier is then its revision.
func (l *Ledger) record(ctx context.Context, e Entry) (op lease.Op, earlier uint64, err error) {
	kve, err := l.kv.Get(ctx, e.key())
	switch {
	case errors.Is(err, jetstream.ErrKeyNotFound), errors.Is(err, jetstream.ErrKeyDeleted):
		return 0, 0, nil
	case err != nil:
		return 0, 0, err
	case len(kve.Value()) != 1:
		return 0, 0, fmt.Errorf("ledger entry %s holds %d bytes", e.key(), len(kve.Value()))
	case kve.Created().Before(e.Since):
		return 0, kve.Revision(), nil
	}
	return lease.Op(kve.Value()[0]), 0, nil
}

// each runs fn for every entry, claimWorkers at a time.
func (l *Ledger) each(ctx context.Context, es []Entry, fn func(context.Context, Entry) (lease.Op, error)) ([]lease.Op, []error) {
	ops := make([]lease.Op, len(es))
	fails := make([]error, len(es))
	sem := make(chan struct{}, claimWorkers)
	var wg sync.WaitGroup
	for i, e := range es {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			op, err := fn(ctx, e)
			if err != nil {
				err = fmt.Errorf("%w: the settle ledger: %v", errs.ErrUnavailable, err)
			}
			ops[i], fails[i] = op, err
		})
	}
	wg.Wait()
	return ops, fails
}

// Whose says whose lease a settle acts on, which decides what the ledger
// must know first.
type Whose uint8

const (
	// Issued is a lease this replica handed out. Its table knows its state;
	// only a Nak is recorded in the ledger (before it is sent), since a Nak
	// is what supersedes a delivery before its deadline.
	Issued Whose = iota
	// Adopted is a lease whose issuer is gone, known from its token alone.
	// Every settle claims the delivery in the ledger first: one that finds
	// it nak'ed or settled otherwise is refused rather than sent, because
	// it would land on the next delivery of the message.
	Adopted
)

// Verdict is the ledger's word on a settle about to be sent.
type Verdict uint8

const (
	// Send: nothing came first, or the same Ack or Term (a retry, whose
	// first try may not have reached the server): nothing can have
	// superseded the delivery, so sending it is safe.
	Send Verdict = iota
	// Done: the same Nak came first. It may have been applied, and sent
	// again it would land on the redelivery; at worst the message returns
	// after its ack wait. Not sent, and a success.
	Done
	// Refuse: another settle came first (errs.ErrLeaseSettled). Not sent.
	Refuse
)

// Verdicts records in the ledger what must be known before op is sent for
// each entry, as whose leases they are requires, and says whether to send
// it. An entry whose verdict could not be learnt has an error
// (errs.ErrUnavailable) and is not to be sent. A nil Ledger (one replica
// alone, in tests) says Send to all.
func (l *Ledger) Verdicts(ctx context.Context, op lease.Op, w Whose, es []Entry) ([]Verdict, []error) {
	vs := make([]Verdict, len(es))
	if !l.Consulted(op, w) {
		return vs, make([]error, len(es))
	}
	var prior []lease.Op
	var fails []error
	if op == lease.OpExtend {
		prior, fails = l.Lookup(ctx, es) // a +WPI supersedes nothing
	} else {
		prior, fails = l.Claim(ctx, op, es)
	}
	for j, p := range prior {
		switch {
		case fails[j] != nil, p == 0, p == op && (op == lease.OpAck || op == lease.OpTerm):
		case p == op && op == lease.OpNak:
			vs[j] = Done
		default:
			vs[j] = Refuse
		}
	}
	return vs, fails
}

// Consulted reports whether Verdicts asks the ledger for op on w's leases:
// when not, every verdict is Send, and a caller need not make the entries.
func (l *Ledger) Consulted(op lease.Op, w Whose) bool {
	return l != nil && (w == Adopted || op == lease.OpNak)
}

// NakedAlready reports for each entry whether the ledger shows it nak'ed:
// a Nak whose lease is past its deadline may be the retry of one that took,
// which is done, not a failure (and must not be sent again). A record from
// before the entry's Since is of another delivery with the same count, and
// the Nak a first try.
func (l *Ledger) NakedAlready(ctx context.Context, es []Entry) []bool {
	naked := make([]bool, len(es))
	if l == nil || len(es) == 0 {
		return naked
	}
	prior, fails := l.Lookup(ctx, es)
	for j := range es {
		naked[j] = fails[j] == nil && prior[j] == lease.OpNak
	}
	return naked
}
