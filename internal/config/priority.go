package config

import (
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetgate/jetgate/internal/consumer"
)

var priorityPolicies = map[string]jetstream.PriorityPolicy{
	"overflow":      jetstream.PriorityPolicyOverflow,
	"pinned_client": jetstream.PriorityPolicyPinned,
	"prioritized":   jetstream.PriorityPolicyPrioritized,
}

const priorityPolicyNames = "overflow, pinned_client, prioritized"

// maxGroupLen bounds a priority group's name, as the server does.
const maxGroupLen = 16

// priority sets on cc the priority and pause fields k names.
func (k Consumer) priority(cc *consumer.Config) {
	cc.PriorityGroups = k.PriorityGroups
	if p, ok := priorityPolicies[k.PriorityPolicy]; ok {
		cc.PriorityPolicy = &p
	}
	cc.PinnedTTL = time.Duration(k.PriorityTimeout)
	if t, err := time.Parse(time.RFC3339Nano, k.PauseUntil); err == nil {
		cc.PauseUntil = &t
	}
}

// validatePriority checks the priority and pause fields of consumer k at p.
func (c *validator) validatePriority(p string, k Consumer) *Error {
	policy, named := k.PriorityPolicy, c.named(p+".priority_policy")
	if _, ok := priorityPolicies[policy]; named && !ok {
		return c.errorf(p+".priority_policy", "%s is not a priority policy: use one of %s", quote(policy), priorityPolicyNames)
	}
	switch {
	case policy != "" && len(k.PriorityGroups) == 0:
		return c.errorf(p+".priority_policy", "%s needs %s (the server requires at least one group)", policy, c.label(p+".priority_groups"))
	case policy == "" && len(k.PriorityGroups) > 0:
		return c.errorf(p+".priority_groups", "need %s (%s)", c.label(p+".priority_policy"), priorityPolicyNames)
	case k.PriorityTimeout != 0 && policy != "pinned_client":
		return c.errorf(p+".priority_timeout", "goes with %s pinned_client", c.label(p+".priority_policy"))
	case k.PriorityTimeout < 0:
		return c.errorf(p+".priority_timeout", "%v: must not be negative", k.PriorityTimeout)
	}
	for j, g := range k.PriorityGroups {
		if g == "" || len(g) > maxGroupLen || strings.ContainsFunc(g, func(r rune) bool {
			return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("-_/=", r))
		}) {
			return c.errorf(index(p+".priority_groups", j), "%s: a group is 1 to %d characters of A-Z, a-z, 0-9, -, _, / and =", quote(g), maxGroupLen)
		}
	}
	if k.PauseUntil != "" {
		if _, err := time.Parse(time.RFC3339Nano, k.PauseUntil); err != nil {
			return c.errorf(p+".pause_until", "%s: give an RFC 3339 time, such as 2026-01-02T15:04:05Z", quote(k.PauseUntil))
		}
	}
	return nil
}
