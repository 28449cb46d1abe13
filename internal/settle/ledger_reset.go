package settle

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetgate/jetgate/internal/natsname"
)

// resetKey is the key of the last reset of a consumer noticed: a replica
// that binds the consumer after a reset, or that was away while it was
// made, learns of it there.
func resetKey(stream, consumer string) string { return natsname.Key(stream, consumer) + ".reset" }

// RecordReset records that a reset of the consumer was noticed at at, for
// the replicas that bind it later (LastReset) and those that were away
// (ResetRecordOf): a token made before it must not be settled on their
// word. The latest time noticed stands, whatever order the replicas write
// in, but every call writes the record anew, so that its revision tells
// each reset from the ones before it whatever the writers' clocks say. It
// ages out after ttl (no token from before it lasts that long).
func (l *Ledger) RecordReset(ctx context.Context, stream, consumer string, at time.Time, ttl time.Duration) error {
	if l == nil {
		return nil
	}
	key := resetKey(stream, consumer)
	for range 3 {
		ms := at.UnixMilli()
		kve, err := l.kv.Get(ctx, key)
		switch {
		case errors.Is(err, jetstream.ErrKeyNotFound), errors.Is(err, jetstream.ErrKeyDeleted):
		case err != nil:
			return err
		default:
			if was, err := strconv.ParseInt(string(kve.Value()), 10, 64); err == nil {
				ms = max(ms, was) // a later one stands
			}
			// A TTL is set only by a create: the record is purged first.
			if err := l.kv.Purge(ctx, key, jetstream.LastRevision(kve.Revision())); err != nil {
				if written(err) { // written meanwhile
					continue
				}
				return err
			}
		}
		_, err = l.kv.Create(ctx, key, strconv.AppendInt(nil, ms, 10), jetstream.KeyTTL(ttl))
		if !written(err) {
			return err
		}
	}
	return fmt.Errorf("the record %s changed under each of three tries", key)
}

// ResetRecord is the ledger's record of a consumer's resets as it stands.
type ResetRecord struct {
	// At is when the last reset was noticed, by the clock of the replica
	// that noticed it; zero: none recorded, or the record is being written.
	At time.Time
	// Rev is the revision of the key's last write (0: none): every
	// RecordReset raises it, and so does its purge before the write, or
	// the marker left as it ages out.
	Rev uint64
	// Stored is when the server stored that write, by its clock.
	Stored time.Time
}

// ResetRecordOf reads the consumer's reset record. A nil Ledger has none.
func (l *Ledger) ResetRecordOf(ctx context.Context, stream, consumer string) (ResetRecord, error) {
	if l == nil {
		return ResetRecord{}, nil
	}
	kve, err := l.kv.Get(ctx, resetKey(stream, consumer))
	switch {
	case errors.Is(err, jetstream.ErrKeyNotFound):
		return ResetRecord{}, nil
	case errors.Is(err, jetstream.ErrKeyDeleted) && kve != nil: // purged, to be written again; or aged out
		return ResetRecord{Rev: kve.Revision(), Stored: kve.Created()}, nil
	case errors.Is(err, jetstream.ErrKeyDeleted):
		return ResetRecord{}, nil
	case err != nil:
		return ResetRecord{}, err
	}
	ms, err := strconv.ParseInt(string(kve.Value()), 10, 64)
	if err != nil {
		return ResetRecord{}, fmt.Errorf("ledger entry %s: %q is no time", resetKey(stream, consumer), kve.Value())
	}
	return ResetRecord{At: time.UnixMilli(ms), Rev: kve.Revision(), Stored: kve.Created()}, nil
}

// LastReset is when a reset of the consumer was last noticed by any replica
// (RecordReset); zero if none was. A record being written again (purged
// first) counts as of its purge, by the server's clock: the reset it is
// written for was noticed before.
func (l *Ledger) LastReset(ctx context.Context, stream, consumer string) (time.Time, error) {
	rec, err := l.ResetRecordOf(ctx, stream, consumer)
	if rec.At.IsZero() && rec.Rev != 0 {
		return rec.Stored, err
	}
	return rec.At, err
}
