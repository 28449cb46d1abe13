package config

import (
	"fmt"
	"io"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/jetgate/jetgate/internal/consumer"
)

// Masked is what Write prints in place of a secret.
const Masked = "***"

// Write prints the effective configuration as YAML that Parse reads back
// to the same configuration: defaults filled in, secrets masked. A consumer
// that leaves a seed field out (ack_wait, max_ack_pending, deliver_policy)
// keeps it out, with a comment saying what is sent for it on create. Paths
// are printed (a credentials or key file's name is no secret); what files
// hold is never read. The secrets are the password or token in nats.url,
// and the API keys' hashes (which would let a key be tried offline): with
// those masked the output reads back only as a description.
func Write(w io.Writer, c *Config) error {
	m := *c
	m.NATS.URL = MaskURLs(c.NATS.URL)
	metrics, reflection := On(c.Listen.Metrics), On(c.Listen.Reflection)
	m.Listen.Metrics, m.Listen.Reflection = &metrics, &reflection
	m.Auth.APIKeys = slices.Clone(c.Auth.APIKeys)
	for i := range m.Auth.APIKeys {
		m.Auth.APIKeys[i].SHA256 = Masked
	}
	m.Consumers = slices.Clone(c.Consumers)
	for i, k := range m.Consumers {
		if k.Push != nil {
			p := *k.Push
			p.URL = maskQuery(p.URL)
			m.Consumers[i].Push = &p
		}
	}
	var doc yaml.Node
	if err := doc.Encode(&m); err != nil {
		return err
	}
	doc.HeadComment = "effective jetgate configuration, secrets masked"
	if c.file != "" {
		doc.HeadComment = "effective jetgate configuration of " + c.file + ", flags applied, secrets masked"
	}
	if notes := serverChecks(c); len(notes) > 0 {
		doc.HeadComment += "\nchecked at start-up, on the NATS server:\n  " + strings.Join(notes, "\n  ")
	}
	if cs := value(&doc, "consumers"); cs != nil {
		for i, k := range cs.Content {
			if seeds := c.Consumers[i].seeds(); seeds != "" {
				if key := keyNode(k, "name"); key != nil {
					key.LineComment = "on create: " + seeds + "; an existing consumer keeps its own"
				}
			}
		}
	}
	flowScalarLists(&doc)
	enc := yaml.NewEncoder(w)
	enc.SetIndent(2)
	if err := enc.Encode(&doc); err != nil {
		return err
	}
	return enc.Close()
}

// seeds lists what bootstrap sends on create for the seed fields k does not
// name, "" if it names them all.
func (k Consumer) seeds() string {
	var s []string
	switch {
	case k.AckWait == 0 && len(k.Backoff) > 0:
		s = append(s, "ack_wait "+k.Backoff[0].String()+" (the backoff's first step, which the server takes)")
	case k.AckWait == 0:
		s = append(s, "ack_wait "+Duration(consumer.SeedAckWait).String())
	}
	if k.MaxAckPending == 0 {
		s = append(s, fmt.Sprintf("max_ack_pending %d", consumer.SeedMaxAckPending))
	}
	if k.DeliverPolicy == "" {
		s = append(s, "deliver_policy all")
	}
	return strings.Join(s, ", ")
}

// serverChecks are the rules Validate leaves to start-up, as notes.
func serverChecks(c *Config) []string {
	var notes []string
	seen := make(map[string]bool)
	for _, k := range c.Consumers {
		if c.StreamNamed(k.Stream) == nil && !seen[k.Stream] {
			seen[k.Stream] = true
			notes = append(notes, fmt.Sprintf("stream %s exists (it is not in streams)", k.Stream))
		}
		if dl := k.DeadLetter; dl != nil && c.StreamBinding(dl.Subject) == nil {
			notes = append(notes, fmt.Sprintf("a stream other than %s binds dead-letter subject %s", k.Stream, dl.Subject))
		}
	}
	return notes
}

// MaskURLs masks the user information of each comma-separated URL: a
// password, or a lone user name (which NATS takes as a token).
func MaskURLs(urls string) string {
	parts := strings.Split(urls, ",")
	for i, u := range parts {
		rest, scheme := u, ""
		if j := strings.Index(u, "://"); j >= 0 {
			scheme, rest = u[:j+3], u[j+3:]
		}
		at := strings.LastIndexByte(rest, '@')
		if at < 0 {
			continue
		}
		user := Masked
		if name, _, hasPassword := strings.Cut(rest[:at], ":"); hasPassword {
			user = name + ":" + Masked
		}
		parts[i] = scheme + user + rest[at:]
	}
	return strings.Join(parts, ",")
}

// value is the value node of key in the document's top mapping.
func value(doc *yaml.Node, key string) *yaml.Node {
	root := doc
	if root.Kind == yaml.DocumentNode && len(root.Content) > 0 {
		root = root.Content[0]
	}
	if k := keyNode(root, key); k != nil {
		for i := 0; i+1 < len(root.Content); i += 2 {
			if root.Content[i] == k {
				return root.Content[i+1]
			}
		}
	}
	return nil
}

func keyNode(m *yaml.Node, key string) *yaml.Node {
	if m.Kind != yaml.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			return m.Content[i]
		}
	}
	return nil
}

// flowScalarLists prints lists of plain values on one line: [a, b].
func flowScalarLists(n *yaml.Node) {
	if n.Kind == yaml.SequenceNode {
		flow := true
		for _, e := range n.Content {
			flow = flow && e.Kind == yaml.ScalarNode
		}
		if flow {
			n.Style = yaml.FlowStyle
		}
	}
	for _, e := range n.Content {
		flowScalarLists(e)
	}
}
