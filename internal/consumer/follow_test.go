package consumer

import (
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// FollowUpdate asks infos until one shows the update: an info from before
// it must not pass for it. The case that did: a backoff removed (ack_wait
// already its first step), where the old config showed the ack_wait asked
// and a backoff the request left out was taken as "not named", so the
// replica stopped following with the old backoff, and dated leases by a
// wait the server no longer kept (seen in TestFaultSeeksAndEditsMidTraffic's
// long form).
func TestAnInfoFromBeforeAnUpdateDoesNotShowIt(t *testing.T) {
	withBackoff := jetstream.ConsumerConfig{AckWait: time.Second, BackOff: []time.Duration{time.Second, 3 * time.Second}, MaxAckPending: 1024}
	noBackoff := jetstream.ConsumerConfig{AckWait: time.Second, MaxAckPending: 1024}
	cases := []struct {
		name       string
		cfg, asked jetstream.ConsumerConfig
		want       bool
	}{
		{"backoff removed, info from before", withBackoff, noBackoff, false},
		{"backoff removed, info from after", noBackoff, noBackoff, true},
		{"backoff added, info from before", noBackoff, jetstream.ConsumerConfig{AckWait: 30 * time.Second, BackOff: withBackoff.BackOff}, false},
		// With a backoff the server sets ack_wait to its first step.
		{"backoff added, info from after", withBackoff, jetstream.ConsumerConfig{AckWait: 30 * time.Second, BackOff: withBackoff.BackOff}, true},
		{"ack_wait cut, info from before", jetstream.ConsumerConfig{AckWait: 30 * time.Second}, jetstream.ConsumerConfig{AckWait: 3 * time.Second}, false},
		{"ack_wait cut, info from after", jetstream.ConsumerConfig{AckWait: 3 * time.Second}, jetstream.ConsumerConfig{AckWait: 3 * time.Second}, true},
		{"ack_wait left to the server", jetstream.ConsumerConfig{AckWait: 30 * time.Second}, jetstream.ConsumerConfig{}, true},
		{"max_ack_pending changed, info from before", noBackoff, jetstream.ConsumerConfig{AckWait: time.Second, MaxAckPending: 10}, false},
		// An info from before an update that gives the consumer a group
		// stopped the follow, and Fetches were refused until the next info.
		{"a group added, info from before", noBackoff, jetstream.ConsumerConfig{AckWait: time.Second, PriorityGroups: []string{"jobs"}, PriorityPolicy: jetstream.PriorityPolicyOverflow}, false},
		{"a group added, info from after", jetstream.ConsumerConfig{AckWait: time.Second, PriorityGroups: []string{"jobs"}, PriorityPolicy: jetstream.PriorityPolicyOverflow},
			jetstream.ConsumerConfig{AckWait: time.Second, PriorityGroups: []string{"jobs"}, PriorityPolicy: jetstream.PriorityPolicyOverflow}, true},
		// An info from before an update that lowers a limit on a pull
		// request stopped the follow, and Fetches over it were refused
		// until the next info.
		{"max_request_batch lowered, info from before", noBackoff, jetstream.ConsumerConfig{AckWait: time.Second, MaxRequestBatch: 45}, false},
		{"max_request_batch lowered, info from after", jetstream.ConsumerConfig{AckWait: time.Second, MaxRequestBatch: 45},
			jetstream.ConsumerConfig{AckWait: time.Second, MaxRequestBatch: 45}, true},
		{"max_request_batch left to the server", jetstream.ConsumerConfig{AckWait: time.Second, MaxRequestBatch: 256}, jetstream.ConsumerConfig{AckWait: time.Second}, true},
		{"max_request_expires lowered, info from before", noBackoff, jetstream.ConsumerConfig{AckWait: time.Second, MaxRequestExpires: time.Second}, false},
		{"max_request_expires removed, info from before", jetstream.ConsumerConfig{AckWait: time.Second, MaxRequestExpires: time.Second}, noBackoff, false},
		{"max_request_max_bytes lowered, info from before", noBackoff, jetstream.ConsumerConfig{AckWait: time.Second, MaxRequestMaxBytes: 1024}, false},
		{"max_request_max_bytes lowered, info from after", jetstream.ConsumerConfig{AckWait: time.Second, MaxRequestMaxBytes: 1024},
			jetstream.ConsumerConfig{AckWait: time.Second, MaxRequestMaxBytes: 1024}, true},
		{"the policy changed, info from before", jetstream.ConsumerConfig{AckWait: time.Second, PriorityGroups: []string{"jobs"}, PriorityPolicy: jetstream.PriorityPolicyOverflow},
			jetstream.ConsumerConfig{AckWait: time.Second, PriorityGroups: []string{"jobs"}, PriorityPolicy: jetstream.PriorityPolicyPinned}, false},
	}
	for _, tc := range cases {
		if got := shows(tc.cfg, tc.asked); got != tc.want {
			t.Errorf("%s: shows = %v; want %v", tc.name, got, tc.want)
		}
	}
}
