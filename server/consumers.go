package server

import (
	"context"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"google.golang.org/protobuf/types/known/durationpb"

	jetgatev1 "github.com/jetgate/jetgate/api/jetgate/v1"
	"github.com/jetgate/jetgate/internal/auth"
	"github.com/jetgate/jetgate/internal/consumer"
	"github.com/jetgate/jetgate/internal/errs"
	"github.com/jetgate/jetgate/internal/natsname"
	"github.com/jetgate/jetgate/internal/replica"
)

// admin is what the consumer service needs of the replica for consumers
// through the API (replica/consumers.go).
type admin interface {
	CreateConsumer(ctx context.Context, principal, stream string, cfg jetstream.ConsumerConfig) (*jetstream.ConsumerInfo, error)
	UpdateConsumer(ctx context.Context, principal, stream, name string, change func(*jetstream.ConsumerConfig) error) (*jetstream.ConsumerInfo, error)
	DeleteConsumer(ctx context.Context, principal, stream, name string) error
}

func (s *consumerService) CreateConsumer(ctx context.Context, req *jetgatev1.CreateConsumerRequest) (*jetgatev1.CreateConsumerResponse, error) {
	if err := natsname.Check("stream", req.GetStream()); err != nil {
		return nil, s.status(fmt.Errorf("%w: %v", errs.ErrInvalidArgument, err))
	}
	if req.GetConfig() == nil {
		return nil, s.status(fmt.Errorf("%w: config: describe the consumer (durable_name at least)", errs.ErrInvalidArgument))
	}
	if n := req.GetConfig().GetDurableName(); strings.Contains(n, ":") {
		// REST reads …/consumers/a:seek as Seek on a: such a consumer could
		// not be read, updated or deleted over REST.
		return nil, s.status(fmt.Errorf("%w: config.durable_name %q: a consumer made through the API holds no colon (REST reads NAME:VERB as a method on the consumer)", errs.ErrInvalidArgument, n))
	}
	var cfg jetstream.ConsumerConfig
	for _, f := range fields { // a create sets them all
		if err := f.set(&cfg, req.GetConfig()); err != nil {
			return nil, s.status(err)
		}
	}
	if err := firstStep(&cfg, req.GetConfig().GetAckWait() != nil); err != nil {
		return nil, s.status(err)
	}
	ci, err := s.admin.CreateConsumer(ctx, auth.Principal(ctx), req.GetStream(), cfg)
	if err != nil {
		return nil, s.status(err)
	}
	return &jetgatev1.CreateConsumerResponse{Config: consumerConfigOf(ci), State: consumerStateOf(ci)}, nil
}

func (s *consumerService) UpdateConsumer(ctx context.Context, req *jetgatev1.UpdateConsumerRequest) (*jetgatev1.UpdateConsumerResponse, error) {
	if err := validateNames(req.GetStream(), req.GetConsumer()); err != nil {
		return nil, s.status(err)
	}
	fields, err := maskFields(req.GetUpdateMask().GetPaths())
	if err != nil {
		return nil, s.status(err)
	}
	in := req.GetConfig()
	if in == nil {
		in = &jetgatev1.ConsumerConfig{}
	}
	if n := in.GetDurableName(); n != "" && n != req.GetConsumer() {
		return nil, s.status(fmt.Errorf("%w: config.durable_name %q is not the consumer of the path, %q: a consumer cannot be renamed", errs.ErrInvalidArgument, n, req.GetConsumer()))
	}
	ci, err := s.admin.UpdateConsumer(ctx, auth.Principal(ctx), req.GetStream(), req.GetConsumer(), func(cfg *jetstream.ConsumerConfig) error {
		for _, f := range fields {
			if err := f.change(cfg, in); err != nil {
				return err
			}
		}
		return firstStep(cfg, slices.ContainsFunc(fields, func(f field) bool { return f.name == "ack_wait" }))
	})
	if err != nil {
		return nil, s.status(err)
	}
	return &jetgatev1.UpdateConsumerResponse{Config: consumerConfigOf(ci), State: consumerStateOf(ci)}, nil
}

func (s *consumerService) DeleteConsumer(ctx context.Context, req *jetgatev1.DeleteConsumerRequest) (*jetgatev1.DeleteConsumerResponse, error) {
	if err := validateNames(req.GetStream(), req.GetConsumer()); err != nil {
		return nil, s.status(err)
	}
	if err := s.admin.DeleteConsumer(ctx, auth.Principal(ctx), req.GetStream(), req.GetConsumer()); err != nil {
		return nil, s.status(err)
	}
	return &jetgatev1.DeleteConsumerResponse{}, nil
}

// field is one field of ConsumerConfig a caller may set: its proto name and
// how its value goes into the server's configuration.
type field struct {
	name    string
	set     func(*jetstream.ConsumerConfig, *jetgatev1.ConsumerConfig) error
	created bool // only on create (the server does not change it later)
}

// fields are the ConsumerConfig fields of a pull consumer with explicit
// acks; nothing that would make one jetgate cannot serve (push fields have
// no place in the message).
// maxFilterSubjects bounds the filter subjects of a consumer made or
// changed through the API: the server's cost of them grows as their square
// (10,000 held its JetStream API 3.7s for one create).
const maxFilterSubjects = 256

// minRequestExpires is the shortest max_request_expires of a consumer made
// or changed through the API. Under 20ms the server refuses every pull
// jetgate makes (PULL_REFUSED on each Fetch); under a second an idle Consume
// stream pulls tens of times a second (47 at 20ms).
const minRequestExpires = time.Second

var fields = []field{
	{name: "durable_name", created: true, set: func(c *jetstream.ConsumerConfig, in *jetgatev1.ConsumerConfig) error {
		c.Durable = in.GetDurableName()
		return nil
	}},
	{name: "deliver_policy", created: true, set: func(c *jetstream.ConsumerConfig, in *jetgatev1.ConsumerConfig) error {
		if in.GetDeliverPolicy() == jetgatev1.DeliverPolicy_DELIVER_POLICY_UNSPECIFIED {
			return nil
		}
		p, ok := keyOf(deliverPolicies, in.GetDeliverPolicy())
		if !ok {
			return fmt.Errorf("%w: config.deliver_policy %v is not one the server knows", errs.ErrInvalidArgument, in.GetDeliverPolicy())
		}
		c.DeliverPolicy = p
		return nil
	}},
	{name: "opt_start_seq", created: true, set: func(c *jetstream.ConsumerConfig, in *jetgatev1.ConsumerConfig) error {
		c.OptStartSeq = in.GetOptStartSeq()
		return nil
	}},
	{name: "opt_start_time", created: true, set: func(c *jetstream.ConsumerConfig, in *jetgatev1.ConsumerConfig) error {
		if t := in.GetOptStartTime(); t != nil {
			if t.CheckValid() != nil {
				return fmt.Errorf("%w: config.opt_start_time is not a valid time", errs.ErrInvalidArgument)
			}
			at := t.AsTime()
			c.OptStartTime = &at
		}
		return nil
	}},
	{name: "ack_policy", created: true, set: func(c *jetstream.ConsumerConfig, in *jetgatev1.ConsumerConfig) error {
		switch in.GetAckPolicy() {
		case jetgatev1.AckPolicy_ACK_POLICY_UNSPECIFIED, jetgatev1.AckPolicy_ACK_POLICY_EXPLICIT:
			c.AckPolicy = jetstream.AckExplicitPolicy
			return nil
		}
		return fmt.Errorf("%w: config.ack_policy %v: jetgate serves consumers with explicit acks only", errs.ErrInvalidArgument, in.GetAckPolicy())
	}},
	{name: "ack_wait", set: func(c *jetstream.ConsumerConfig, in *jetgatev1.ConsumerConfig) error {
		if d := in.GetAckWait(); d != nil && d.AsDuration() == 0 { // the server would take it for "unset"
			return fmt.Errorf("%w: config.ack_wait 0s: must be at least %v (leave it out for the default)", errs.ErrInvalidArgument, consumer.MinAckWait)
		}
		return duration("ack_wait", in.GetAckWait(), &c.AckWait)
	}},
	{name: "max_deliver", set: func(c *jetstream.ConsumerConfig, in *jetgatev1.ConsumerConfig) error {
		return intOf("max_deliver", in.GetMaxDeliver(), -1, &c.MaxDeliver)
	}},
	{name: "backoff", set: func(c *jetstream.ConsumerConfig, in *jetgatev1.ConsumerConfig) error {
		c.BackOff = nil
		for i, b := range in.GetBackoff() {
			var d time.Duration
			if err := duration(fmt.Sprintf("backoff[%d]", i), b, &d); err != nil {
				return err
			}
			c.BackOff = append(c.BackOff, d)
		}
		return nil
	}},
	{name: "filter_subjects", set: func(c *jetstream.ConsumerConfig, in *jetgatev1.ConsumerConfig) error {
		if n := len(in.GetFilterSubjects()); n > maxFilterSubjects {
			return fmt.Errorf("%w: config.filter_subjects: %d given; at most %d (the NATS server checks every pair of them at each create and update, which every other caller waits for)",
				errs.ErrInvalidArgument, n, maxFilterSubjects)
		}
		for i, f := range in.GetFilterSubjects() {
			if why := natsname.SubjectProblem(f, true); why != "" {
				return fmt.Errorf("%w: config.filter_subjects[%d] %q %s", errs.ErrInvalidArgument, i, f, why)
			}
		}
		c.FilterSubject, c.FilterSubjects = "", in.GetFilterSubjects()
		if len(c.FilterSubjects) == 1 {
			c.FilterSubject, c.FilterSubjects = c.FilterSubjects[0], nil
		}
		return nil
	}},
	{name: "max_waiting", created: true, set: func(c *jetstream.ConsumerConfig, in *jetgatev1.ConsumerConfig) error {
		return intOf("max_waiting", in.GetMaxWaiting(), 0, &c.MaxWaiting)
	}},
	{name: "max_ack_pending", set: func(c *jetstream.ConsumerConfig, in *jetgatev1.ConsumerConfig) error {
		return intOf("max_ack_pending", in.GetMaxAckPending(), 0, &c.MaxAckPending)
	}},
	{name: "max_request_batch", set: func(c *jetstream.ConsumerConfig, in *jetgatev1.ConsumerConfig) error {
		return intOf("max_request_batch", in.GetMaxRequestBatch(), 0, &c.MaxRequestBatch)
	}},
	{name: "max_request_max_bytes", set: func(c *jetstream.ConsumerConfig, in *jetgatev1.ConsumerConfig) error {
		return intOf("max_request_max_bytes", in.GetMaxRequestMaxBytes(), 0, &c.MaxRequestMaxBytes)
	}},
	{name: "max_request_expires", set: func(c *jetstream.ConsumerConfig, in *jetgatev1.ConsumerConfig) error {
		if err := duration("max_request_expires", in.GetMaxRequestExpires(), &c.MaxRequestExpires); err != nil {
			return err
		}
		if d := c.MaxRequestExpires; d > 0 && d < minRequestExpires {
			return fmt.Errorf("%w: config.max_request_expires %v: at least %v, or none (jetgate's pulls wait 20ms at the least, and an idle Consume stream pulls once per max_request_expires)",
				errs.ErrInvalidArgument, d, minRequestExpires)
		}
		return nil
	}},
	{name: "num_replicas", created: true, set: func(c *jetstream.ConsumerConfig, in *jetgatev1.ConsumerConfig) error {
		if n := in.GetNumReplicas(); n < 0 || n > 5 {
			return fmt.Errorf("%w: config.num_replicas %d: 0 (the stream's) to 5", errs.ErrInvalidArgument, n)
		}
		c.Replicas = int(in.GetNumReplicas())
		return nil
	}},
	{name: "description", set: func(c *jetstream.ConsumerConfig, in *jetgatev1.ConsumerConfig) error {
		c.Description = in.GetDescription()
		return nil
	}},
	{name: "priority_groups", set: func(c *jetstream.ConsumerConfig, in *jetgatev1.ConsumerConfig) error {
		c.PriorityGroups = in.GetPriorityGroups()
		return nil
	}},
	{name: "priority_policy", set: func(c *jetstream.ConsumerConfig, in *jetgatev1.ConsumerConfig) error {
		c.PriorityPolicy = jetstream.PriorityPolicyNone
		if in.GetPriorityPolicy() == jetgatev1.PriorityPolicy_PRIORITY_POLICY_UNSPECIFIED {
			return nil
		}
		p, ok := keyOf(priorityPolicies, in.GetPriorityPolicy())
		if !ok {
			return fmt.Errorf("%w: config.priority_policy %v is not one the server knows", errs.ErrInvalidArgument, in.GetPriorityPolicy())
		}
		c.PriorityPolicy = p
		return nil
	}},
	{name: "priority_timeout", set: func(c *jetstream.ConsumerConfig, in *jetgatev1.ConsumerConfig) error {
		return duration("priority_timeout", in.GetPriorityTimeout(), &c.PinnedTTL)
	}},
	{name: "metadata", set: func(c *jetstream.ConsumerConfig, in *jetgatev1.ConsumerConfig) error {
		// The server's keys and jetgate's stay as they are: sent back as
		// read (an update's read-modify-write, AIP-134), they are taken;
		// changed or added, refused.
		md := make(map[string]string, len(in.GetMetadata()))
		for k, v := range c.Metadata {
			if reservedKey(k) {
				md[k] = v
			}
		}
		for k, v := range in.GetMetadata() {
			if was, ok := c.Metadata[k]; reservedKey(k) && (!ok || was != v) {
				return fmt.Errorf("%w: config.metadata key %q: keys starting _nats or jetgate. are the server's and jetgate's: send them as read, or leave them out", errs.ErrInvalidArgument, k)
			}
			md[k] = v
		}
		c.Metadata = md
		return nil
	}},
	{name: "inactive_threshold", set: func(c *jetstream.ConsumerConfig, in *jetgatev1.ConsumerConfig) error {
		if d := in.GetInactiveThreshold(); d != nil && d.AsDuration() == 0 { // said: none, which an admin bound refuses
			c.InactiveThreshold = replica.NoInactiveThreshold
			return nil
		}
		return duration("inactive_threshold", in.GetInactiveThreshold(), &c.InactiveThreshold)
	}},
}

// firstStep refuses an ack_wait asked for beside a backoff whose first step
// it is not: the server takes that step as the ack_wait, whatever ack_wait
// says (a pedantic server refuses it, as here).
func firstStep(c *jetstream.ConsumerConfig, asked bool) error {
	if !asked || c.AckWait == 0 || len(c.BackOff) == 0 || c.AckWait == c.BackOff[0] {
		return nil
	}
	return fmt.Errorf("%w: config.ack_wait %v with backoff %v: the server takes backoff's first step, %v, as the ack_wait: leave ack_wait out, or make it %v",
		errs.ErrInvalidArgument, c.AckWait, c.BackOff, c.BackOff[0], c.BackOff[0])
}

// reservedKey reports whether a metadata key is the server's or jetgate's.
func reservedKey(k string) bool {
	return strings.HasPrefix(k, "_nats") || strings.HasPrefix(k, "jetgate.")
}

// maskFields are the fields an update_mask names: those an update may
// change, and those fixed at create, which it may send as they are (a
// read-modify-write of the whole config, AIP-134 and AIP-203).
func maskFields(paths []string) ([]field, error) {
	if len(paths) == 0 {
		return nil, fmt.Errorf("%w: update_mask: name the fields to change (updateMask over REST, e.g. \"ackWait,maxDeliver\")", errs.ErrInvalidArgument)
	}
	var out []field
	for _, p := range paths {
		i := slices.IndexFunc(fields, func(f field) bool { return f.name == p })
		if i < 0 {
			return nil, fmt.Errorf("%w: update_mask: %q is no field of the consumer's config; these can be changed: %s", errs.ErrInvalidArgument, p, updatable())
		}
		out = append(out, fields[i])
	}
	return out, nil
}

// change sets f in cfg from in for an update; a field fixed at create
// must come as the consumer has it.
func (f field) change(cfg *jetstream.ConsumerConfig, in *jetgatev1.ConsumerConfig) error {
	if !f.created {
		return f.set(cfg, in)
	}
	probe := *cfg
	if err := f.set(&probe, in); err != nil {
		return err
	}
	if !reflect.DeepEqual(probe, *cfg) {
		return fmt.Errorf("%w: config.%s is fixed when the consumer is created: send it as GetConsumer shows it, or leave it out of update_mask (delete the consumer and create it again to change it); these can be changed: %s",
			errs.ErrInvalidArgument, f.name, updatable())
	}
	return nil
}

// updatable names the fields an update may change, as gRPC's update_mask
// names them and as REST's updateMask does (lowerCamelCase: the JSON form
// of a field mask takes no other).
func updatable() string {
	var names, rest []string
	for _, f := range fields {
		if !f.created {
			names = append(names, f.name)
			rest = append(rest, lowerCamel(f.name))
		}
	}
	return strings.Join(names, ", ") + " (in REST's updateMask: " + strings.Join(rest, ", ") + ")"
}

// lowerCamel is a proto field's name as JSON writes it: max_ack_pending is
// maxAckPending.
func lowerCamel(name string) string {
	parts := strings.Split(name, "_")
	for i := 1; i < len(parts); i++ {
		if parts[i] != "" {
			parts[i] = strings.ToUpper(parts[i][:1]) + parts[i][1:]
		}
	}
	return strings.Join(parts, "")
}

func duration(name string, d *durationpb.Duration, out *time.Duration) error {
	if d == nil {
		*out = 0
		return nil
	}
	if d.CheckValid() != nil || d.AsDuration() < 0 {
		return fmt.Errorf("%w: config.%s must be a positive duration", errs.ErrInvalidArgument, name)
	}
	*out = d.AsDuration()
	return nil
}

func intOf(name string, v, least int64, out *int) error {
	if v < least || v > 1<<31-1 {
		return fmt.Errorf("%w: config.%s %d is out of range: %d to %d", errs.ErrInvalidArgument, name, v, least, 1<<31-1)
	}
	*out = int(v)
	return nil
}

// keyOf is the key of m whose value is v.
func keyOf[K comparable, V comparable](m map[K]V, v V) (K, bool) {
	for k, mv := range m {
		if mv == v {
			return k, true
		}
	}
	var zero K
	return zero, false
}
