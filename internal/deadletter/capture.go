package deadletter

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	"github.com/nats-io/nats.go/jetstream"
)

// The advisory stream is shared by every deployment of jetgate on the
// account, and its subjects can only be replaced whole. Two replicas that
// add theirs at once, each to the subjects it read, would leave the stream
// with one's alone: the other's dead letters would go uncaptured, silently,
// until it starts again. So the subjects are agreed first, in a KV record
// written with compare-and-set (Options.Agreed), and each replica, having
// brought the stream up to the record, proves that the record did not move
// on meanwhile by writing it again at the revision it read (a read may be
// answered by a lagging replica of the bucket). If it moved, a replica that
// read an older record may have updated the stream after it, and it updates
// again: the last to update the stream always does so with the whole
// record. Subjects are only ever added.

// agreedKey is the KV key of the agreed subjects.
const agreedKey = "advisory_subjects"

// captureTries bounds the tries of one capture, and of each agreement:
// each try again follows another replica's write of the record.
const captureTries = 64

// capture makes the advisory stream (cfg, made if missing) capture cfg's
// subjects besides those it has, as agreed in agreed (nil: added without
// agreement).
func capture(ctx context.Context, js jetstream.JetStream, agreed jetstream.KeyValue, cfg jetstream.StreamConfig) (jetstream.Stream, error) {
	if agreed == nil {
		return ensure(ctx, js, cfg)
	}
	failed := func(err error) error {
		return fmt.Errorf("agree on its subjects (KV %s, key %s): %w", agreed.Bucket(), agreedKey, err)
	}
	for range captureTries {
		rev, all, err := agree(ctx, agreed, cfg.Subjects)
		if err != nil {
			return nil, failed(err)
		}
		c := cfg
		c.Subjects = all
		s, err := ensure(ctx, js, c)
		if err != nil {
			return nil, err
		}
		data, err := json.Marshal(all)
		if err != nil {
			return nil, err
		}
		switch _, err := agreed.Update(ctx, agreedKey, data, rev); {
		case err == nil:
			return s, nil
		case !errors.Is(err, jetstream.ErrKeyRevisionMismatch):
			return nil, failed(err)
		}
	}
	return nil, failed(fmt.Errorf("the record changed under each of %d tries", captureTries))
}

// agree adds subjects to the agreed record, and returns the record and its
// revision.
func agree(ctx context.Context, kv jetstream.KeyValue, subjects []string) (uint64, []string, error) {
	for range captureTries {
		rev, have, err := agreedSubjects(ctx, kv)
		if err != nil {
			return 0, nil, err
		}
		all := union(have, subjects)
		if len(all) == len(have) {
			return rev, all, nil
		}
		data, err := json.Marshal(all)
		if err != nil {
			return 0, nil, err
		}
		if rev == 0 {
			rev, err = kv.Create(ctx, agreedKey, data)
		} else {
			rev, err = kv.Update(ctx, agreedKey, data, rev)
		}
		switch {
		case err == nil:
			return rev, all, nil
		case !errors.Is(err, jetstream.ErrKeyExists) && !errors.Is(err, jetstream.ErrKeyRevisionMismatch):
			return 0, nil, err
		}
		// Another replica's subjects came first: add to those.
	}
	return 0, nil, fmt.Errorf("the record changed under each of %d tries", captureTries)
}

// agreedSubjects is the agreed record and its revision (0: none yet).
func agreedSubjects(ctx context.Context, kv jetstream.KeyValue) (uint64, []string, error) {
	e, err := kv.Get(ctx, agreedKey)
	switch {
	case errors.Is(err, jetstream.ErrKeyNotFound), errors.Is(err, jetstream.ErrKeyDeleted):
		return 0, nil, nil
	case err != nil:
		return 0, nil, err
	}
	var subjects []string
	if err := json.Unmarshal(e.Value(), &subjects); err != nil {
		return 0, nil, fmt.Errorf("the record holds no list of subjects: %w", err)
	}
	return e.Revision(), subjects, nil
}

// ensure makes the stream of cfg, or adds cfg's subjects that it lacks.
func ensure(ctx context.Context, js jetstream.JetStream, cfg jetstream.StreamConfig) (jetstream.Stream, error) {
	s, err := js.Stream(ctx, cfg.Name)
	if errors.Is(err, jetstream.ErrStreamNotFound) {
		s, err = js.CreateStream(ctx, cfg)
		if !errors.Is(err, jetstream.ErrStreamNameAlreadyInUse) {
			return s, err
		}
		s, err = js.Stream(ctx, cfg.Name) // made meanwhile by another replica
	}
	if err != nil {
		return nil, err
	}
	have := s.CachedInfo().Config
	if all := union(have.Subjects, cfg.Subjects); len(all) > len(have.Subjects) {
		have.Subjects = all
		return js.UpdateStream(ctx, have)
	}
	return s, nil
}

// union is have with the subjects it lacks of add appended, in their order.
func union(have, add []string) []string {
	all := slices.Clone(have)
	for _, s := range add {
		if !slices.Contains(all, s) {
			all = append(all, s)
		}
	}
	return all
}
