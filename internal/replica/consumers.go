package replica

import (
	"cmp"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"maps"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetgate/jetgate/internal/consumer"
	"github.com/jetgate/jetgate/internal/errs"
	"github.com/jetgate/jetgate/internal/natsname"
)

// Consumers through the API (DESIGN section 18): created, updated and
// deleted by callers granted admin, within the admin block's bounds. A
// consumer created so carries its creator in its metadata (CreatedBy); it
// is served on demand by every replica (binder.bindOnDemand), and only
// consumers carrying the mark may be updated or deleted: never those of the
// gateway's file, nor those operators made with their own tools.

// anonymous is the creator named when authentication is off.
const anonymous = "anonymous"

// CreateConsumer creates consumer cfg.Durable on stream for principal.
func (m *manager) CreateConsumer(ctx context.Context, principal, stream string, cfg jetstream.ConsumerConfig) (*jetstream.ConsumerInfo, error) {
	if err := natsname.Check("config.durable_name", cfg.Durable); err != nil {
		return nil, fmt.Errorf("%w: %v", errs.ErrInvalidArgument, err)
	}
	if err := m.adminMay(stream, cfg.Durable); err != nil {
		return nil, err
	}
	cfg.Name = cfg.Durable
	cfg.Metadata = withCreator(cfg.Metadata, cmp.Or(principal, anonymous))
	cfg.Metadata[consumer.CreateID] = rand.Text() // the second of two identical creates is refused
	s, limits, err := m.limitsNow(ctx, stream, &cfg)
	if err != nil {
		return nil, err
	}
	if err := admitted(m.binder.admin, &cfg, nil, limits); err != nil {
		return nil, err
	}
	// The server takes a create of a consumer that exists with the same
	// configuration as done: a name taken is refused here, whoever took it,
	// before the quota is counted, and again once held.
	if err := nameFree(ctx, s, stream, cfg.Durable); err != nil {
		return nil, err
	}
	if err := m.underQuota(ctx, cmp.Or(principal, anonymous)); err != nil {
		return nil, err
	}
	var ci *jetstream.ConsumerInfo
	err = m.locks.hold(ctx, m.env, "create", stream, cfg.Durable, func(ctx context.Context) error {
		if err := nameFree(ctx, s, stream, cfg.Durable); err != nil {
			return err
		}
		cons, err := s.CreateConsumer(ctx, cfg)
		switch {
		case errors.Is(err, jetstream.ErrConsumerExists):
			return fmt.Errorf("%w: stream %q has a consumer %q already", errs.ErrConsumerExists, stream, cfg.Durable)
		case err != nil:
			return serverRefusal("create", err)
		}
		ci = cons.CachedInfo()
		return nil
	})
	if err != nil {
		return nil, err
	}
	if err := m.keptInQuota(ctx, s, cmp.Or(principal, anonymous), ci); err != nil {
		return nil, err
	}
	m.log.Info("a consumer was created through the API", "stream", stream, "consumer", cfg.Durable, "principal", principal)
	return ci, nil
}

// nameFree checks that stream s has no consumer name.
func nameFree(ctx context.Context, s jetstream.Stream, stream, name string) error {
	switch _, err := s.Consumer(ctx, name); {
	case err == nil:
		return fmt.Errorf("%w: stream %q has a consumer %q already", errs.ErrConsumerExists, stream, name)
	case !errors.Is(err, jetstream.ErrConsumerNotFound):
		return fmt.Errorf("%w: look up consumer %q of stream %q: %v", errs.ErrUnavailable, name, stream, err)
	}
	return nil
}

// UpdateConsumer changes consumer stream/name for principal: change edits
// its configuration as the server has it. The read and the write are one
// change of the consumer, held from every other (consumers_lock.go).
func (m *manager) UpdateConsumer(ctx context.Context, principal, stream, name string, change func(*jetstream.ConsumerConfig) error) (*jetstream.ConsumerInfo, error) {
	if err := m.adminMay(stream, name); err != nil {
		return nil, err
	}
	var ci *jetstream.ConsumerInfo
	err := m.locks.hold(ctx, m.env, "update", stream, name, func(ctx context.Context) (err error) {
		ci, err = m.update(ctx, principal, stream, name, change)
		return err
	})
	return ci, err
}

// update is UpdateConsumer's read, change and write.
func (m *manager) update(ctx context.Context, principal, stream, name string, change func(*jetstream.ConsumerConfig) error) (*jetstream.ConsumerInfo, error) {
	cur, err := m.created(ctx, stream, name)
	if err != nil {
		return nil, err
	}
	cfg := cur.Config
	if err := change(&cfg); err != nil {
		return nil, err
	}
	cfg.Metadata = withCreator(cfg.Metadata, cur.Config.Metadata[consumer.CreatedBy]) // the creator stays
	s, limits, err := m.limitsNow(ctx, stream, &cfg)
	if err != nil {
		return nil, err
	}
	if err := admitted(m.binder.admin, &cfg, &cur.Config, limits); err != nil {
		return nil, err
	}
	unpin := cur.Config.PriorityPolicy == jetstream.PriorityPolicyPinned && cfg.PriorityPolicy != jetstream.PriorityPolicyPinned
	if unpin && len(cfg.PriorityGroups) == 0 {
		// No group left to unpin by once updated: before, then (a pull in
		// between may take a pin the update then keeps).
		m.unpin(ctx, s, name, cur.Config.PriorityGroups)
	}
	cons, err := s.UpdateConsumer(ctx, cfg)
	if err != nil {
		return nil, serverRefusal("update", err)
	}
	if unpin {
		m.unpin(ctx, s, name, cfg.PriorityGroups)
	}
	m.log.Info("a consumer was updated through the API", "stream", stream, "consumer", name, "principal", principal)
	return cons.CachedInfo(), nil
}

// DeleteConsumer deletes consumer stream/name for principal, and stops
// serving it at once: its leases are void and its waiting callers
// answered (the other replicas follow the server's advisory).
func (m *manager) DeleteConsumer(ctx context.Context, principal, stream, name string) error {
	if err := m.adminMay(stream, name); err != nil {
		return err
	}
	err := m.locks.hold(ctx, m.env, "delete", stream, name, func(ctx context.Context) error {
		if _, err := m.created(ctx, stream, name); err != nil {
			return err
		}
		s, err := m.binder.stream(ctx, stream)
		if err != nil {
			return err
		}
		if err := s.DeleteConsumer(ctx, name); err != nil && !errors.Is(err, jetstream.ErrConsumerNotFound) {
			return serverRefusal("delete", err)
		}
		return nil
	})
	if err != nil {
		return err
	}
	m.binder.unbind(ctx, consumerKey{stream, name}, "deleted through the API", func(*binding) bool { return true })
	m.log.Info("a consumer was deleted through the API", "stream", stream, "consumer", name, "principal", principal)
	return nil
}

// adminMay checks that the admin block is on and names stream/name, and
// that the consumer is not one of the gateway's file.
func (m *manager) adminMay(stream, name string) error {
	a := m.binder.admin
	switch {
	case a == nil:
		return fmt.Errorf("%w: this gateway's configuration has no admin block", errs.ErrAdminDisabled)
	case natsname.Internal(stream):
		return fmt.Errorf("%w: stream %q is jetgate's own", errs.ErrAdminBound, stream)
	case m.binder.configured(stream, name):
		return fmt.Errorf("%w: consumer %q of stream %q is in the gateway's configuration; change it there", errs.ErrConsumerConfigured, name, stream)
	case !a.Matches(stream, name):
		return fmt.Errorf("%w: consumer %q of stream %q: the admin block allows streams %q and consumer names %q", errs.ErrAdminBound, name, stream, a.Streams, a.Consumers)
	}
	return nil
}

// created is the info of a consumer created through the API that the
// admin block names.
func (m *manager) created(ctx context.Context, stream, name string) (*jetstream.ConsumerInfo, error) {
	if err := m.adminMay(stream, name); err != nil {
		return nil, err
	}
	s, err := m.binder.stream(ctx, stream)
	if err != nil {
		return nil, err
	}
	cons, err := s.Consumer(ctx, name)
	switch {
	case errors.Is(err, jetstream.ErrConsumerNotFound):
		return nil, fmt.Errorf("%w: stream %q has no consumer %q", errs.ErrConsumerNotFound, stream, name)
	case err != nil:
		return nil, fmt.Errorf("%w: look up consumer %q of stream %q: %v", errs.ErrUnavailable, name, stream, err)
	}
	ci := cons.CachedInfo()
	if ci.Config.Metadata[consumer.CreatedBy] == "" {
		return nil, fmt.Errorf("%w: consumer %q of stream %q was not created through jetgate's API; change it with the tools that made it", errs.ErrConsumerNotCreatedByAPI, name, stream)
	}
	return ci, nil
}

// underQuota checks that principal has created fewer consumers than the
// admin block allows, counting those on every stream it names.
func (m *manager) underQuota(ctx context.Context, principal string) error {
	a := m.binder.admin
	if a.MaxPerPrincipal == 0 {
		return nil
	}
	n := 0
	err := m.binder.eachCreated(ctx, func(string) bool { return true }, func(_ string, ci *jetstream.ConsumerInfo) {
		if ci.Config.Metadata[consumer.CreatedBy] == principal {
			n++
		}
	})
	if err != nil {
		return fmt.Errorf("count the consumers of %q: %w", principal, err)
	}
	if n >= a.MaxPerPrincipal {
		return fmt.Errorf("%w: %q has created %d consumers; the admin block allows %d", errs.ErrConsumerQuota, principal, n, a.MaxPerPrincipal)
	}
	return nil
}

// unpin lets go of the pin of a consumer whose policy is no longer
// pinned_client: the server keeps it otherwise, and serves none but its
// holder until priority_timeout. One pin holds for the whole consumer, so
// one of groups (of its configuration as the server has it) does.
func (m *manager) unpin(ctx context.Context, s jetstream.Stream, name string, groups []string) {
	if len(groups) == 0 {
		return
	}
	if err := s.UnpinConsumer(ctx, name, groups[0]); err != nil {
		m.log.Warn("could not unpin a consumer whose policy is no longer pinned_client; only the old pin's holder is served until its priority_timeout",
			"stream", s.CachedInfo().Config.Name, "consumer", name, "err", err)
	}
}

// keptInQuota checks, once ci is made, that it is within its creator's
// quota: creates that raced past underQuota each count the others, and
// those not among the first MaxPerPrincipal of the creator's (by the
// server's creation time, then stream and name: the same order on every
// replica) back out, deleting theirs. A count that fails keeps it: the
// consumer exists, and the caller was admitted by underQuota. Both the
// count and the delete outlast the caller's going away: the consumer exists
// by then.
func (m *manager) keptInQuota(ctx context.Context, s jetstream.Stream, principal string, ci *jetstream.ConsumerInfo) error {
	a := m.binder.admin
	if a.MaxPerPrincipal == 0 {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*m.binder.timeout)
	defer cancel()
	type made struct {
		at           time.Time
		stream, name string
	}
	ours := made{ci.Created, ci.Stream, ci.Name}
	before := 0 // the creator's consumers made before ours
	err := m.binder.eachCreated(ctx, func(string) bool { return true }, func(stream string, c *jetstream.ConsumerInfo) {
		o := made{c.Created, stream, c.Name}
		if c.Config.Metadata[consumer.CreatedBy] == principal &&
			cmp.Or(o.at.Compare(ours.at), cmp.Compare(o.stream, ours.stream), cmp.Compare(o.name, ours.name)) < 0 {
			before++
		}
	})
	if err != nil {
		m.log.Warn("could not count the creator's consumers after a create; it is kept", "stream", ci.Stream, "consumer", ci.Name, "principal", principal, "err", err)
		return nil
	}
	if before < a.MaxPerPrincipal {
		return nil
	}
	left := func(err error) error {
		m.log.Warn("could not delete a consumer created past its creator's quota", "stream", ci.Stream, "consumer", ci.Name, "principal", principal, "err", err)
		return fmt.Errorf("%w: consumer %q was created past %q's quota of %d (others were made meanwhile), and could not be deleted; delete it: %v",
			errs.ErrUnavailable, ci.Name, principal, a.MaxPerPrincipal, err)
	}
	err = m.locks.hold(ctx, m.env, "delete", ci.Stream, ci.Name, func(ctx context.Context) error {
		switch cur, err := s.Consumer(ctx, ci.Name); {
		case errors.Is(err, jetstream.ErrConsumerNotFound): // gone already (a racer of the same name)
		case err != nil:
			return err
		case !cur.CachedInfo().Created.Equal(ci.Created): // made again under its name since: not ours
		default:
			if err := s.DeleteConsumer(ctx, ci.Name); err != nil && !errors.Is(err, jetstream.ErrConsumerNotFound) {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return left(err)
	}
	return fmt.Errorf("%w: %q is at its quota of %d consumers (others were made meanwhile)", errs.ErrConsumerQuota, principal, a.MaxPerPrincipal)
}

// eachCreated calls f with each consumer created through the API on the
// streams the admin block allows and may admits (never jetgate's own): the
// stream names, then every CONSUMER.LIST page of each. A stream deleted
// meanwhile is passed over.
func (bd *binder) eachCreated(ctx context.Context, may func(stream string) bool, f func(stream string, ci *jetstream.ConsumerInfo)) error {
	names := bd.js.StreamNames(ctx)
	for stream := range names.Name() {
		if !bd.admin.StreamAllowed(stream) || natsname.Internal(stream) || !may(stream) {
			continue
		}
		s, err := bd.stream(ctx, stream)
		if errors.Is(err, errs.ErrStreamNotFound) {
			continue // deleted since the names were read
		}
		if err != nil {
			return err
		}
		list := s.ListConsumers(ctx)
		for ci := range list.Info() {
			if ci.Config.Metadata[consumer.CreatedBy] != "" {
				f(stream, ci)
			}
		}
		if err := list.Err(); err != nil {
			return fmt.Errorf("%w: list the consumers of stream %q: %v", errs.ErrUnavailable, stream, err)
		}
	}
	if err := names.Err(); err != nil {
		return fmt.Errorf("%w: list streams: %v", errs.ErrUnavailable, err)
	}
	return nil
}

// withCreator is md with the creator mark, a copy.
func withCreator(md map[string]string, creator string) map[string]string {
	out := maps.Clone(md)
	if out == nil {
		out = make(map[string]string, 1)
	}
	out[consumer.CreatedBy] = creator
	return out
}

// serverRefusal is the server's refusal of a create, update or delete.
func serverRefusal(op string, err error) error {
	var api *jetstream.APIError
	switch {
	case errors.As(err, &api):
		return fmt.Errorf("%w: the server refused to %s the consumer: %s", errs.ErrManageRefused, op, api.Description)
	case errors.Is(err, nats.ErrMaxPayload):
		return fmt.Errorf("%w: the consumer's configuration is larger than the NATS server takes in one request (its max_payload): shorten its description or metadata", errs.ErrInvalidArgument)
	}
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
		return err
	}
	return fmt.Errorf("%w: %s the consumer: %v", errs.ErrUnavailable, op, err)
}
